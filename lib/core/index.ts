export { Redlock } from './redlock';
export type { RedlockInternals, RedlockStats } from './redlock';
export type { ReleaseResult } from './lock';
export { Lock } from './lock';
export type { LockNode, AcquireReply, AcquireRequest } from './node';
export { IoredisLockNode } from './node';
export type { NodeSpec } from './node-specs';
export type { Clock, Timer } from './clock';
export { systemClock } from './clock';
export type { RedlockOptions, AcquireOptions, UsingOptions, RedlockLogger, CallSettings } from './options';
export { DEFAULT_OPTIONS } from './options';
export type { ReadyState } from './readiness';
export {
  RedlockError,
  InvalidArgumentError,
  LockBusyError,
  QuorumUnavailableError,
  LockLostError,
  AcquireAbortedError,
} from './errors';
export type { NodeVote } from './errors';
export type { RedlockEventMap, RedlockEventName } from './events';
export type { HealthReport, NodeHealth } from './health';
