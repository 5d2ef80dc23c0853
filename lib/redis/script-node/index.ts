/**
 * What every client kind shares: the script node base class, release channels, renewal batches, Cluster slots,
 * readiness, closing, loading the optional client packages. Only the base class and its types reach the
 * published declarations: the rest are @internal, since their declarations import ioredis types, which a
 * node-redis application does not have.
 */
/** @internal */
export { ioredis, nodeRedis } from './client-packages';
/** @internal */
export { explainClusterReply } from './cluster-member';
/** @internal */
export { isClusterClient } from './cluster-slots';
/** @internal */
export { quitClient } from './quit-client';
export { SentinelWatch } from './sentinel-watch';
/** @internal */
export { waitForReady } from './readiness';
/** @internal */
export { ChannelHub, ioredisChannels } from './release-channels';
/** @internal */
export type { SubscriberPort } from './release-channels';
export { ScriptLockNode } from './script-node';
export type { NodeChannels, ScanTarget } from './script-node';
/** @internal */
export { ended } from './client-end';
