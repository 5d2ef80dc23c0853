/**
 * nestjs-redlock: distributed locks for NestJS over N independent Redis nodes (the Redlock algorithm).
 *
 * The curated public API. Everything else under `lib/` is internal and may change without notice.
 *
 * @packageDocumentation
 */

// ------------------------------------------------------------------------------------------ Nest layer

/** The module: `RedlockModule.forRoot(nodes, options?)` or `RedlockModule.forRootAsync({ ... })`; global. */
export { RedlockModule } from './redlock.module';
/** The injectable service: `acquire`, `tryAcquire`, `extend`, `release`, `using` (reentrant), `current()`. */
export { RedlockService } from './redlock.service';
/** `@Locked(template | keyFn, options?)`: runs a method only while holding the lock its arguments name. */
export { Locked } from './locked';
/** The methods `@Locked` accepts: returning a Promise or an Observable (synchronous ones are refused). */
export type { LockableMethod } from './locked';
/** A `@nestjs/terminus` health indicator: up while a quorum of nodes answers; per-node details. */
export { RedlockHealthIndicator } from './redlock.health';
/** What `RedlockHealthIndicator.isHealthy()` returns. */
export type { RedlockHealthResult } from './redlock.health';
/** The exception filter answering `LockBusyError` with 409 Conflict over HTTP (registered by the module). */
export { LockBusyFilter } from './lock-busy.filter';
/** Defaults of the Nest-level options: `connectTimeout`, `shutdownTimeout`, `busyFilter`. */
export { DEFAULT_MODULE_OPTIONS } from './redlock.constants';
/** Options of `@Locked`: `ttl`, `wait`, `onBusy: 'throw' | 'skip'` (and any other core per-call option). */
export type { LockedOptions } from './locked';
/** Module options: `nodes`, the core options, `logger`, `connectTimeout`, `shutdownTimeout`. */
export type { RedlockModuleOptions } from './redlock.interfaces';
/** The second argument of `forRoot`: the module options without `nodes`, plus the extras. */
export type { RedlockRootOptions } from './redlock.interfaces';
/** Options that shape the module itself (`busyFilter`), accepted by `forRoot` and `forRootAsync`. */
export type { RedlockModuleExtras } from './redlock.interfaces';
/** `forRootAsync` options: `imports`, `inject` + `useFactory`, `useClass` or `useExisting`. */
export type { RedlockModuleAsyncOptions } from './redlock.interfaces';
/** A class that produces the module options for `forRootAsync({ useClass | useExisting })`. */
export type { RedlockOptionsFactory } from './redlock.interfaces';

// ------------------------------------------------------------------------------------------ without Nest

/** Everything that works without Nest (also published alone as `nestjs-redlock/core`): the core, telemetry. */
export * from './standalone';

// ------------------------------------------------------------------------------------------ testing

/**
 * In-memory lock nodes for an application's tests without Redis: `RedlockModule.forRoot(memoryNodes(), ...)`;
 * apps given the same nodes contend as on shared Redis nodes. One process only — no exclusion across
 * processes; refused under `NODE_ENV=production` unless `allowInProduction: true`. (Also in `nestjs-redlock/core`.)
 */
export { memoryNodes } from './testing';
/** One in-memory node, with the faults a test can ask for: `pause()`, `resume()`, `down`, `loseData()`. */
export { MemoryNode } from './testing';
/** Options of `memoryNodes()`: `allowInProduction`, `restartGuard`, `name`. */
export type { MemoryNodesOptions } from './testing';

// ------------------------------------------------------------------------------------------ lock keys

/** A `@Locked` key: template, array of templates, or a function of the method's arguments. */
export type { LockKeySource } from './locked';
/** A lock key template is malformed (at start-up) or cannot be rendered from a call's arguments. */
export { InvalidLockKeyError } from './locked';
