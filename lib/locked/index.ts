/**
 * `@Locked` and what it runs on: the decorator, the method that replaces the decorated one, the locked
 * sections of an application (call chain, held locks, shutdown refusal) and lock key templates.
 */
export { Locked } from './locked.decorator';
export type { LockableMethod } from './locked.decorator';
export type { LockedOptions } from './locked.options';
export { LockedSections } from './locked-sections';
export type { SectionOutcome } from './locked-sections';
export { InvalidLockKeyError, compileLockKey } from './lock-key';
export type { CompiledLockKey, LockKeySource } from './lock-key';
