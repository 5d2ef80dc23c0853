/**
 * Message factories of `@Locked` and the locked sections, kept in one place so the wording can be reviewed
 * together. Each says what happened, where (class and method, resource) and what to do.
 *
 * @internal
 */
import { describe, formatResources, textHint } from '../core';

/** `"a"` or `["a","b"]`. */
const resourcesOf = (resources: readonly string[]): string => formatResources(resources);

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

export function badOncePerTick(value: unknown): string {
  return (
    `oncePerTick must be true or false, got ${describe(value)}.${textHint(value, 'boolean')} Default: true ` +
    '(a scheduled method runs at most once per tick across instances).'
  );
}

export function badOnBusy(value: unknown): string {
  return (
    `onBusy must be 'throw' or 'skip', got ${describe(value)}. Default: 'throw' when called, 'skip' on a ` +
    'scheduled tick.'
  );
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

/** The first skipped tick of a method: what happened, what to check, and that the next ones are quieter. */
export function ticksDown(line: string): string {
  return (
    `${line} Check that a majority of the Redis nodes is reachable. Further skipped ticks of this method are ` +
    'logged at debug level until one runs again.'
  );
}

/** A tick this instance gave up on a split vote, with no holder of its lock on a quorum when it looked. */
export function tickUnclaimed(
  where: string,
  schedule: string,
  resources: readonly string[],
  attempts: number,
): string {
  return (
    `${where} (${schedule}) did not run this tick here: the instances' votes stayed split (${attempts} attempts), ` +
    `and no instance held ${resources.map((r) => `'${r}'`).join(', ')} on a majority of the nodes afterwards, so ` +
    'this tick may not have run anywhere. Frequent lines like this one mean the instances fire together on a ' +
    'loaded host or network: give the tick a longer wait (@Locked(key, { wait })).'
  );
}

/** Ticks of a method run again after `skipped` were skipped. */
export function ticksBack(where: string, schedule: string, skipped: number): string {
  return `${where} (${schedule}) runs again: a quorum took its tick's lock (${skipped} tick${skipped === 1 ? '' : 's'} skipped meanwhile).`;
}

export function synchronousMethod(where: string, type: string): string {
  return (
    `@Locked cannot decorate ${where}: it is declared to return ${type}, synchronously, and its work could not ` +
    `wait for the lock. Make it async (or return an Observable).`
  );
}

export function writeInsideRead(where: string, resources: readonly string[]): string {
  return (
    `${where} asks to write ${resourcesOf(resources)}, which this call chain holds for reading: the write would ` +
    `wait for its own read lock. Take the outer lock with mode 'write' (a read inside a write passes), or ` +
    `do the write outside the read section.`
  );
}
