/**
 * Operating locks: inspection, holders, revocation (and the registry of held locks that revocations reach),
 * health probes.
 */
export { probeNodes } from './health';
export type { HealthReport, NodeHealth } from './health';
export { holdersOptions, inspectResource, listHolders, oneResource } from './inspection';
export type { InspectionContext, LockHolder, LockInspection, NodeInspection } from './inspection';
export type { LockWaiter, WaitingSummary } from './waiters';
export { Revocations } from './revocation';
export type { HoldersOptions, RevokeOptions, RevokeOutcome } from './revocation';
