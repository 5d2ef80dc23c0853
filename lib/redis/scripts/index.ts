/**
 * The Lua scripts, one file per script: its source, its KEYS/ARGV layout and the parser of its reply.
 */
export {
  UnexpectedReplyError,
  acquireReplyOf,
  flagReplyOf,
  flagsReplyOf,
  inspectReplyOf,
  limitReplyOf,
  releaseReplyOf,
  revokeReplyOf,
} from './replies';
export {
  ACQUIRE_SCRIPT,
  EXTEND_MANY_SCRIPT,
  EXTEND_SCRIPT,
  FENCE_SCRIPT,
  INSPECT_SCRIPT,
  LIMIT_SCRIPT,
  READ_EXTEND_SCRIPT,
  READ_FENCE_SCRIPT,
  READ_RELEASE_SCRIPT,
  RELEASE_SCRIPT,
  REVOKE_SCRIPT,
  acquireCall,
  extendCall,
  extendManyCall,
  fenceCall,
  limitCall,
  releaseCall,
  revokeCall,
} from './scripts';
export type { LuaScript, ScriptCall } from './scripts';
