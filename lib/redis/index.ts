/**
 * The Redis adapter behind the core's `LockNode` port: ioredis nodes, the Lua scripts they run, command
 * batching, release announcements, node specs, readiness and closing.
 */
export { Redlock } from './redis-redlock';
export type { NodeSpec } from './node-specs';
/** @internal */
export { IoredisLockNode } from './ioredis';
export { ACQUIRE_SCRIPT, EXTEND_SCRIPT, FENCE_SCRIPT, RELEASE_SCRIPT } from './scripts';
