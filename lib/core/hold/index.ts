/**
 * Holding a lock: extending it, renewing every held lock from one watchdog in batches, deadlines and the loss
 * signal, running work under a lock.
 */
export { extendBatch } from './extend-batch';
export { extendLock } from './extend';
export { HeldLockRegistry } from './held-lock-registry';
export { Renewals } from './renewals';
/** @internal */
export { runUnderLock } from './run-under-lock';
/** @internal */
export type { LockHost } from './run-under-lock';
