/**
 * The Lua scripts, one file per script: its source, its KEYS/ARGV layout and the parser of its reply.
 */
export { ACQUIRE_SCRIPT, acquireCall, acquireReplyOf } from './acquire';
export { ACQUIRE_NEEDS_SINCE } from './restart-guard';
export {
  EXTEND_MANY_SCRIPT,
  EXTEND_WRITERS_SCRIPT,
  extendManyCall,
  extendWritersCall,
  flagsReplyOf,
  isSingleWriter,
  writerFlagsReplyOf,
} from './extend-many';
export { EXTEND_SCRIPT, READ_EXTEND_SCRIPT, extendCall } from './extend';
export { FENCE_SCRIPT, READ_FENCE_SCRIPT, fenceCall } from './fence';
export { INSPECT_SCRIPT, inspectReplyOf } from './inspect';
export {
  LIMIT_SCRIPT,
  READ_PERMITS_SCRIPT,
  limitCall,
  limitReplyOf,
  readPermitsCall,
  readPermitsReplyOf,
} from './limit';
export type { LuaScript, ScriptCall } from './lua-script';
export { firstCallOf } from './lua-script';
export { READ_RELEASE_SCRIPT, RELEASE_SCRIPT, releaseCall, releaseReplyOf } from './release';
export { UnexpectedReplyError, flagReplyOf } from './reply-checks';
export { REVOKE_SCRIPT, revokeCall, revokeReplyOf } from './revoke';
export { CLEAR_INTENT_SCRIPT, clearIntentCall, clearIntentReplyOf } from './clear-intent';
