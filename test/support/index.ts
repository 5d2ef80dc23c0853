export { freePort } from './free-port';
export { nodeUptimes, waitForNodeAge } from './node-age';
export { startRedisNodes } from './provision';
export { startTcpProxy } from './tcp-proxy';
export type { TcpProxy } from './tcp-proxy';
export { ADMIN_CLIENT_OPTIONS } from './types';
export type { NodeSource, RedisNodeHandle, RedisNodes, StartRedisNodesOptions } from './types';
export { startFakeRespNode } from './fake-resp-node';
export type { FakeRespNode, RespHandler, RespValue } from './fake-resp-node';
