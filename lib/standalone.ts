/**
 * nestjs-redlock without Nest (`nestjs-redlock/core`): the Redlock algorithm, its errors and types, and the
 * telemetry — for workers, scripts and Express or Fastify apps. Needs a Redis client package only (ioredis, or
 * node-redis with `client: 'node-redis'` or clients passed in); nothing from `@nestjs/*` is loaded. The package
 * root (`nestjs-redlock`) exports all of this too, beside the Nest layer.
 *
 * @packageDocumentation
 */

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

// ------------------------------------------------------------------------------------------ testing

/**
 * In-memory lock nodes for tests without Redis: `new Redlock(memoryNodes(), options)`. One process only — no
 * exclusion across processes; refused under `NODE_ENV=production` unless `allowInProduction: true`.
 */
export { memoryNodes } from './testing';
/** One in-memory node, with the faults a test can ask for: `pause()`, `resume()`, `down`, `loseData()`. */
export { MemoryNode } from './testing';
/** Options of `memoryNodes()`: `allowInProduction`, `restartGuard`, `name`. */
export type { MemoryNodesOptions } from './testing';

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
/**
 * `maxWaiting` callers of the instance already wait for the resources: refused at once (a `LockBusyError`; 429
 * on an HTTP route).
 */
export { LockQueueFullError } from './core';
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
/** A semaphore's limit and free permits as one node holds them (`LockNode.readPermits`, optional). */
export type { PermitsReading } from './core';
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
/** Fair waiting in `inspect()`: one waiter's ticket on a node, and the waiters over every node. */
export type { LockWaiter, WaitingSummary } from './core';
/** Options of `holders()` and `revoke()`, and what a revocation did. */
export type { HoldersOptions, RevokeOptions, RevokeOutcome } from './core';
/** The result of `Redlock.probe()` / `RedlockService.probe()`, and one node's part of it. */
export type { HealthReport, NodeHealth } from './core';
/** A node's clock as an instance sees it (`inspect()`, `probe()`): its last sample's age, the last step seen. */
export type { NodeClockReport } from './core';
/** The events of a `Redlock` instance (`redlock.on(...)`) and their payloads. */
export type { RedlockEventMap, RedlockEventName } from './core';
