/**
 * What a caller asks for: a mutex, a reader or writer, permits of a semaphore, leadership; the request, the
 * local queue and the outcome of one acquisition.
 */
/** @internal */
export { lockResources } from './acquisition';
/** @internal */
export type { LockingContext } from './acquisition';
export type { KeyPlan } from './request';
/** @internal */
export { runLeadership } from './leadership';
export type { LeadOptions } from './leadership';
/** @internal */
export type { TermRunner } from './leadership';
export { LocalQueues } from './local-queue';
export { permitKey } from './permits';
export { limitKey } from './semaphore-read';
