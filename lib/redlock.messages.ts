/**
 * Message factories of the Nest layer, kept in one place so the wording can be reviewed together. Each says
 * what happened, where (class and method, resource, node) and what to do.
 *
 * @internal
 */
import { formatResources } from './core';

/** `"a"` or `["a","b"]`. */
const resourcesOf = (resources: readonly string[]): string => formatResources(resources);

// ------------------------------------------------------------------------------------------ @Locked

export function notAMethod(where: string): string {
  return `@Locked can only decorate methods, but ${where} is not a method.`;
}

export function staticMethod(where: string): string {
  return (
    `@Locked cannot decorate the static method ${where}: it reaches RedlockService through Nest's ` +
    `dependency injection, which only fills instances. Make it an instance method of a provider.`
  );
}

export function badLockedOptions(where: string, problem: string): string {
  return `@Locked on ${where}: ${problem}`;
}

export function lockedAlsoAccepts(keys: readonly string[]): string {
  return ` @Locked also accepts: ${keys.join(', ')}.`;
}

export function badOncePerTick(value: unknown): string {
  return `oncePerTick must be true or false, got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}.`;
}

export function badOnBusy(value: unknown): string {
  return `onBusy must be 'throw' or 'skip', got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}.`;
}

/** The description of the injected property: Nest prints it when RedlockModule is missing. */
export function sectionsProperty(where: string): string {
  return `LockedSections for @Locked ${where} (import RedlockModule.forRoot() or forRootAsync() in the root module)`;
}

export function notManaged(where: string): string {
  return (
    `${where} is decorated with @Locked, but this instance has no LockedSections: it was not created by ` +
    `Nest's injector (e.g. with \`new\`, or by a useValue/useFactory provider), so nothing was injected. ` +
    `Let Nest create it (a class provider, then constructor injection, app.get() or moduleRef.resolve()), ` +
    `and import RedlockModule in the application.`
  );
}

export function unexpectedObservable(where: string): string {
  return (
    `${where} returned an Observable, but @Locked prepared for a Promise because the method's return ` +
    `type was not known when the class was defined, and the lock has already been released. Annotate the ` +
    `return type (\`${where.split('.').pop()}(...): Observable<T>\`) with emitDecoratorMetadata enabled, or ` +
    `make the method async.`
  );
}

export function skipped(where: string, resources: readonly string[]): string {
  return `${where} skipped: ${resourcesOf(resources)} is held elsewhere (onBusy: 'skip').`;
}

// ------------------------------------------------------------------------------------------ service

export function alreadyHeld(resources: readonly string[]): string {
  return (
    `${resourcesOf(resources)} is already held by this call chain (through @Locked or using()); acquiring ` +
    `it again would wait for itself until its ttl runs out. Use using(), which is reentrant, or acquire ` +
    `outside the locked section.`
  );
}

export function shuttingDown(resources: readonly string[]): string {
  return `Cannot lock ${resourcesOf(resources)}: the application is shutting down (RedlockService was closed).`;
}

export function nodeUnreachable(
  node: string,
  error: Error | undefined,
  quorum: number,
  total: number,
): string {
  return (
    `Redis node ${node} is not reachable${error ? ` (${error.message})` : ''}. Locks need ${quorum} of ` +
    `${total} nodes; the client keeps reconnecting.`
  );
}

export function quorumUnreachable(ready: number, total: number, quorum: number): string {
  return (
    `Only ${ready} of ${total} Redis nodes are reachable: every lock will fail until ${quorum} are. ` +
    `Check the node addresses and that a majority of the servers is up.`
  );
}

export function startingInGuard(nodes: readonly string[], wait: number, until: Date): string {
  return (
    `Redis node${nodes.length === 1 ? '' : 's'} ${nodes.join(', ')} started recently (or restarted): the restart ` +
    `guard makes them refuse locks until about ${until.toISOString()} (in ${Math.ceil(wait / 1000)} s), so ` +
    `locks fail until then (503 on HTTP routes; acquire() waits when that is within its wait). This is ` +
    `deliberate after a restart; for development and tests with fresh nodes, set restartGuard: false.`
  );
}

export function connected(total: number, quorum: number): string {
  return `Connected to ${total} Redis node${total === 1 ? '' : 's'} (quorum ${quorum}).`;
}

export function shutdownDraining(count: number): string {
  return `Shutting down: waiting for the work under ${count} lock${count === 1 ? '' : 's'} still held to finish.`;
}

export function shutdownSignal(resources: readonly string[]): string {
  return (
    `The application is shutting down while ${resourcesOf(resources)} is locked: finish the work soon; the ` +
    `lock is released once it returns (within shutdownTimeout), otherwise its keys expire with their ttl.`
  );
}

export function shutdownLeftHeld(timeout: number, resources: readonly string[]): string {
  return (
    `Work still held ${resources.length} lock${resources.length === 1 ? '' : 's'} after shutdownTimeout ` +
    `(${timeout} ms): ${resources.join(', ')}. They are not released under work that may still be running; ` +
    `their keys expire with their ttl.`
  );
}

/** A scheduled tick found no quorum: one line, no stack. */
export function tickUnavailable(where: string, schedule: string, error: Error): string {
  return `${where} (${schedule}) skipped this tick: ${error.message}`;
}

// ------------------------------------------------------------------------------------------ module

export function badModuleOptions(problem: string): string {
  return `Invalid RedlockModule options: ${problem}`;
}

export function badBusyFilter(value: unknown): string {
  return `busyFilter must be true or false, got ${typeof value === 'string' ? JSON.stringify(value) : String(value)}.`;
}

export function importedTwice(): string {
  return (
    'RedlockModule is imported more than once in this application: each import creates its own connections and ' +
    'its own RedlockService, and which one a provider gets is not defined. Import it once, in the root module ' +
    '(it is global).'
  );
}

export function synchronousMethod(where: string, type: string): string {
  return (
    `@Locked cannot decorate ${where}: it is declared to return ${type}, synchronously, and its work could not ` +
    `wait for the lock. Make it async (or return an Observable).`
  );
}

export function busyFilterInFactory(): string {
  return (
    'busyFilter shapes the module (it decides which providers exist), so it is read when the module is ' +
    'assembled, before any factory runs: pass it beside useFactory — RedlockModule.forRootAsync({ busyFilter: ' +
    'false, useFactory: ... }) — or in forRoot(nodes, { busyFilter: false }), not in the options the factory returns.'
  );
}

export function moduleAlsoAccepts(keys: readonly string[]): string {
  return ` RedlockModule also accepts: ${keys.join(', ')}.`;
}

// ------------------------------------------------------------------------------------------ filter

/** The body of the 409 answer. Names the resources but not the nodes (their addresses stay internal). */
export function conflict(resources: readonly string[]): string {
  return `${resourcesOf(resources)} is locked by another operation in progress; try again later.`;
}

/** The body of the 503 answer: the lock could not be taken on enough Redis nodes. */
export function unavailable(resources: readonly string[]): string {
  return `${resourcesOf(resources)} cannot be locked right now (too few lock servers available); try again later.`;
}

/** A node failed an operation (at most one such warning per node every 10 s). */
export function nodeError(node: string, operation: string, error: Error, suppressed: number): string {
  const more = suppressed > 0 ? ` (${suppressed} more errors from this node in the last 10 s)` : '';
  return `Redis node ${node} failed a ${operation}: ${error.message}${more}. Locking continues while a majority of nodes answers.`;
}
