export { Redlock } from './redlock';
export type { RedlockInternals } from './redlock';
export type { ReleaseResult } from './lock';
export { Lock } from './lock';
export type { LockNode, AcquireReply } from './node';
export { IoredisLockNode } from './node';
export type { NodeSpec } from './node-specs';
export type { Clock, Timer } from './clock';
export { systemClock } from './clock';
export type { RedlockOptions, AcquireOptions, RedlockLogger } from './options';
export { DEFAULT_OPTIONS } from './options';
export type { ReadyState } from './readiness';
export {
  RedlockError,
  InvalidArgumentError,
  LockBusyError,
  QuorumUnavailableError,
  LockLostError,
} from './errors';
export type { NodeVote } from './errors';
