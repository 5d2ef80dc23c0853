/**
 * What a caller asks for: a mutex, a reader or writer, permits of a semaphore, leadership; the request, the
 * local queue and the outcome of one acquisition.
 */
export { lockResources } from './acquisition';
export type { LockingContext } from './acquisition';
export type { KeyPlan } from './grant';
export { runLeadership } from './leadership';
export type { LeadOptions, TermRunner } from './leadership';
export { LocalQueues } from './local-queue';
export { limitKey, permitKey } from './permits';
