/**
 * Message factories of the Nest layer, kept in one place so the wording can be reviewed together. Each says
 * what happened, where (class and method, resource, node) and what to do.
 *
 * @internal
 */
import { describe, formatResources, textHint } from './core';

/** `"a"` or `["a","b"]`. */
const resourcesOf = (resources: readonly string[]): string => formatResources(resources);

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

export function badModuleOptions(problem: string): string {
  return `Invalid RedlockModule options: ${problem}`;
}

export function badBusyFilter(value: unknown): string {
  return (
    `busyFilter must be true or false, got ${describe(value)}.${textHint(value, 'boolean')} Default: true ` +
    '(a busy lock on an HTTP route answers 409 Conflict).'
  );
}

export function importedTwice(): string {
  return (
    'RedlockModule is imported more than once in this application: each import creates its own connections and ' +
    'its own RedlockService, and which one a provider gets is not defined. Import it once, in the root module ' +
    '(it is global).'
  );
}

export function busyFilterInFactory(): string {
  return (
    'busyFilter shapes the module (it decides which providers exist), so it is read when the module is ' +
    'assembled, before any factory runs: pass it beside useFactory — RedlockModule.forRootAsync({ busyFilter: ' +
    'false, useFactory: ... }) — or in forRoot(nodes, { busyFilter: false }), not in the options the factory returns.'
  );
}

/** The body of the 409 answer. Names the resources but not the nodes (their addresses stay internal). */
export function conflict(resources: readonly string[]): string {
  return `${resourcesOf(resources)} is locked by another operation in progress; try again later.`;
}

/** The body of the 503 answer: the lock could not be taken on enough Redis nodes. */
export function unavailable(resources: readonly string[]): string {
  return `${resourcesOf(resources)} cannot be locked right now (too few lock servers available); try again later.`;
}

/** The body of the 503 answer when the lock was lost while the request ran. */
export function lostDuringRequest(resources: readonly string[]): string {
  return `The lock on ${resourcesOf(resources)} was lost while the request ran, so it was stopped; try again.`;
}

/** The body of the 503 answer when the lock was revoked while the request ran. */
export function revokedDuringRequest(resources: readonly string[]): string {
  return `The lock on ${resourcesOf(resources)} was revoked while the request ran, so it was stopped; try again.`;
}

/** The body of the 429 answer when too many callers wait for a lock already. */
export function queueFullRequest(resources: readonly string[]): string {
  return `${resourcesOf(resources)} has too many requests waiting for it; try again shortly.`;
}

/** The body of the 503 answer during shutdown. */
export function shuttingDownRequest(): string {
  return 'The service is shutting down; try again.';
}

/** The body of the 503 answer when callers of a semaphore disagree on its number of permits. */
export function permitsInFlux(resources: readonly string[]): string {
  return `${resourcesOf(resources)} cannot be locked right now (its number of permits is being changed); try again later.`;
}

/** A node failed an operation: said once when it starts failing (its next errors are counted, not logged). */
export function nodeError(node: string, operation: string, error: Error): string {
  const article = /^[aeiou]/.test(operation) ? 'an' : 'a';
  // A marker holding another application's data: the node is up and reachable, its error says what to do.
  const check =
    error.name === 'ForeignDataError'
      ? ''
      : 'Check that its address is right and that it is up and reachable; ';
  return (
    `Redis node ${node} failed ${article} ${operation}: ${error.message.replace(/\.$/, '')}. ${check}` +
    `${check ? 'until' : 'Until'} then locks need a majority of the other nodes, and fail when fewer answer. ` +
    'Its next errors are not logged; a line says when it answers again.'
  );
}

/** A node that failed answers again. */
export function nodeBack(node: string, errors: number, downFor: number): string {
  const seconds = downFor < 10_000 ? (downFor / 1000).toFixed(1) : String(Math.round(downFor / 1000));
  return `Redis node ${node} answers again, after ${errors} failed ${errors === 1 ? 'command' : 'commands'} over ${seconds} s.`;
}

/** `forRootAsync()` given something it cannot build the options from. */
export function badAsyncOptions(problem: string): string {
  return (
    `RedlockModule.forRootAsync(): ${problem}. Pass { useFactory: (...deps) => ({ nodes, ...options }), inject: [...] }, ` +
    '{ useClass: X } or { useExisting: X }, where X has createRedlockOptions() returning { nodes, ...options }.'
  );
}
