/**
 * The algorithm, on its own: imports neither `@nestjs/*` nor `ioredis` (test/architecture.spec.ts checks).
 * It reaches nodes only through the `LockNode` port and time only through `Clock`.
 */
export { RedlockCore } from './redlock';
export type { RedlockStats } from './stats';
/** @internal */
export type { RedlockInternals } from './instance';
/** @internal */
export type { SectionLockRequest, SectionPort } from './instance-sections';
export type { ReleaseOutcome, ReleaseResult } from './lock';
export { Lock } from './lock';
export type {
  LockNode,
  AcquireReply,
  AcquireRequest,
  ExtendItem,
  KeyReading,
  NodeReading,
  PermitsReading,
  ReadyState,
  ReleaseListener,
  RevokeRequest,
} from './nodes';
export type { Clock, Timer } from './clock';
export { systemClock, withTimeout } from './clock';
export type {
  RedlockOptions,
  AcquireOptions,
  UsingOptions,
  RedlockLogger,
  CallSettings,
  ResolvedOptions,
} from './options';
export {
  ACQUIRE_OPTION_KEYS,
  DEFAULT_OPTIONS,
  REDLOCK_OPTION_KEYS,
  USING_OPTION_KEYS,
  resolveCallOptions,
  resolveOptions,
  usingArguments,
} from './options';
export { readOptions } from './options';
export { loggerMethods } from './options';
export type { OptionsKind } from './options';
export { normalizeResources } from './resources';
/** @internal */
export { eitherSignal } from './acquire';
export type { LeadOptions } from './primitives';
export type { DeposedReason } from './events';
export {
  RedlockError,
  InvalidArgumentError,
  UnknownOptionError,
  LockBusyError,
  LockQueueFullError,
  QuorumUnavailableError,
  LockLostError,
  LockRevokedError,
  AcquireAbortedError,
  ShutdownError,
  RedlockClosedError,
  ForeignDataError,
  PermitCountMismatchError,
} from './errors';
export type { NodeVote } from './errors';
export { describe, formatResources, textHint } from './messages';
export { MAX_DURATION, durationProblem, validateDuration } from './durations';
export type { RedlockEventMap, RedlockEventName } from './events';
export type { HealthReport, NodeHealth } from './operate';
export type { NodeClockReport } from './nodes';
export type { LockHolder, LockInspection, NodeInspection } from './operate';
export type { LockWaiter, WaitingSummary } from './operate';
export type { HoldersOptions, RevokeOptions, RevokeOutcome } from './operate';
