/**
 * Releasing: owner-checked release on every node, resolving at quorum, and the releases still settling on their
 * last nodes.
 */
export { releaseOnAll } from './release';
export { Releases } from './releases';
export { clearIntents } from './intents';
