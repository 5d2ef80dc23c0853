/**
 * The ioredis (and iovalkey) adapter: its LockNode, its command batching, the option keys a connection accepts.
 */
export { IoredisLockNode, describeClient } from './ioredis-node';
export { ioredisOptionKeys } from './ioredis-option-keys';
