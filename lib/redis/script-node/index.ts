/**
 * What every client kind shares: the script node base class, release channels, renewal batches, Cluster slots,
 * readiness, closing, loading the optional client packages.
 */
export { ioredis, nodeRedis } from './client-packages';
export { explainClusterReply } from './cluster-member';
export { isClusterClient } from './cluster-slots';
export { quitClient } from './quit-client';
export { waitForReady } from './readiness';
export { ChannelHub, ioredisChannels } from './release-channels';
export type { SubscriberPort } from './release-channels';
export { ScriptLockNode } from './script-node';
export type { NodeChannels, ScanTarget } from './script-node';
