/**
 * Attempts and retries of one key set: one attempt on every node (votes, early decision, late answers undone),
 * the retry loop, backoff, waiting for release announcements.
 */
export { acquireWithRetries, failureOf, throwIfAborted } from './acquire';
export type { AcquirePlan, AcquisitionResult } from './plan';
export { ReleaseWaiter } from './release-waiter';
export { backoffDelay, holderDelay } from './retry';
export { eitherSignal } from './signals';
