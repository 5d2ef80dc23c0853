/**
 * The node-redis adapter (versions 4, 5 and 6): its LockNode over a client the application passes in, or one the
 * library creates.
 */
export { NodeRedisLockNode, isNodeRedisClient } from './node-redis-node';
export type { NodeRedisClientLike, NodeRedisClusterLike } from './node-redis-client';
export type { NodeRedisSentinelLike } from './node-redis-sentinel';
