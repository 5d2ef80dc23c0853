/**
 * Options: their defaults, the rules each value is checked against, reading options objects safely, and their
 * messages.
 */
export { readOptions } from './option-object';
export type { OptionsKind } from './option-object';
export { MAX_PERMITS, loggerMethods, validateBoolean, validateTtl } from './option-rules';
export {
  ACQUIRE_OPTION_KEYS,
  DEFAULT_OPTIONS,
  REDLOCK_OPTION_KEYS,
  USING_OPTION_KEYS,
  guardWindowOf,
  readMethodOptions,
  resolveCallOptions,
  resolveOptions,
  usingArguments,
} from './options';
export type {
  AcquireOptions,
  CallSettings,
  RedlockLogger,
  RedlockOptions,
  ResolvedOptions,
  UsingOptions,
} from './options';
