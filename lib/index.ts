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

// ------------------------------------------------------------------------------------------ telemetry

/** Spans and metrics for every lock operation, through OpenTelemetry (an optional peer). */
export { instrumentRedlock } from './telemetry';
/** Options of `instrumentRedlock`, and the parts of an OpenTelemetry tracer and meter it uses. */
export type {
  MeterLike,
  ObservableLike,
  RedlockEventSource,
  RedlockTelemetryOptions,
  SpanLike,
  TracerLike,
} from './telemetry';

// ------------------------------------------------------------------------------------------ lock keys

/** A `@Locked` key: template, array of templates, or a function of the method's arguments. */
export type { LockKeySource } from './locked';
/** A lock key template is malformed (at start-up) or cannot be rendered from a call's arguments. */
export { InvalidLockKeyError } from './locked';

// ------------------------------------------------------------------------------------------ core

/** The algorithm on its own, usable without Nest: `new Redlock(nodes, options)`. */
export { Redlock } from './redis';
/** A lock held on a quorum of nodes: resources, validity (`remainingTime`), `extend()`, `release()`. */
export { Lock } from './core';
/** The frozen defaults of the core options (`ttl`, `wait`, `nodeTimeout`, `driftFactor`, ...). */
export { DEFAULT_OPTIONS } from './core';
/** The base class of every error this library throws. */
export { RedlockError } from './core';
/** A call was given an argument or option it cannot use; thrown before any Redis traffic. */
export { InvalidArgumentError } from './core';
/** An options object has a key the library does not know (usually a misspelling). */
export { UnknownOptionError } from './core';
/** The resources are held by another owner and did not become free within the wait budget. */
export { LockBusyError } from './core';
/** Too few nodes agreed for reasons other than contention; nothing was left locked. */
export { QuorumUnavailableError } from './core';
/** A lock can no longer be guaranteed (validity ran out, or an extension lost its quorum). */
export { LockLostError } from './core';
/** A lock was revoked (`revoke()`, from any process): the holder's `lock.signal` aborts with it, carrying the reason. */
export { LockRevokedError } from './core';
/** The caller's `signal` aborted an acquisition; the keys written so far are removed. */
export { AcquireAbortedError } from './core';
/** The instance was closed with `quit()`: no more locks through it; waiting acquisitions stop with it. */
export { RedlockClosedError } from './core';
/** The application is shutting down: new locks are refused with it; also `lock.signal`'s reason at shutdown. */
export { ShutdownError } from './core';
/** A node's vote error: a restart-guard marker key holds another application's data, left untouched. */
export { ForeignDataError } from './core';
/** A semaphore call with another number of permits than the one recorded for the resource (an `InvalidArgumentError`). */
export { PermitCountMismatchError } from './core';
/** How to reach one node: connection string, ioredis options, ioredis client, or a `LockNode`. */
export type { NodeSpec } from './redis';
/** Options of a `Redlock` instance (and the module's core options). */
export type { RedlockOptions } from './core';
/** Per-call options of `acquire` and `tryAcquire` (and the base of `using`'s). */
export type { AcquireOptions } from './core';
/** Per-call options of `using` (and `@Locked`): those of `acquire` plus `autoExtend` and `onLockLost`. */
export type { UsingOptions } from './core';
/** Options of `lead()` (`ttl`, `recampaign`, `signal`), and why a term of leadership ended. */
export type { DeposedReason, LeadOptions } from './core';
/** Where the core writes its few log lines. */
export type { RedlockLogger } from './core';
/** What one node answered in one attempt; carried by every error. */
export type { NodeVote } from './core';
/** What `release()` did on each node. */
export type { ReleaseOutcome, ReleaseResult } from './core';
/** One Redis node as the algorithm sees it (for custom transports and simulations). */
export type { LockNode } from './core';
/** A node's answer to an acquire request, and the request (part of `LockNode`). */
export type { AcquireReply, AcquireRequest } from './core';
/** One lock of a batched renewal (`LockNode.extendMany`, optional). */
export type { ExtendItem } from './core';
/** Where the core reads time and schedules timers (injectable for simulations). */
export type { Clock } from './core';
/** A cancellable timer returned by a `Clock`. */
export type { Timer } from './core';
/** A node's connection state, as `Redlock.connect()` reports it. */
export type { ReadyState } from './core';
/** Counters of a `Redlock` instance (`redlock.stats`). */
export type { RedlockStats } from './core';
/** What `inspect()` and `holders()` answer: a lock over every node, each node's view, each holder. */
export type { LockHolder, LockInspection, NodeInspection } from './core';
/** Options of `holders()` and `revoke()`, and what a revocation did. */
export type { HoldersOptions, RevokeOptions, RevokeOutcome } from './core';
/** The result of `Redlock.probe()` / `RedlockService.probe()`, and one node's part of it. */
export type { HealthReport, NodeHealth } from './core';
/** The events of a `Redlock` instance (`redlock.on(...)`) and their payloads. */
export type { RedlockEventMap, RedlockEventName } from './core';
