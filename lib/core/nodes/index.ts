/**
 * The nodes: the `LockNode` port, the contract every answer is checked against, asking every node at once (fan-
 * out), connecting and closing.
 */
export { closeNodes, connectInstance } from './connect';
export { askNodes, fanOut, quorumOf, toError, votesOf } from './fan-out';
export type { Answer, NodeGroup } from './fan-out';
export type {
  AcquireReply,
  AcquireRequest,
  ExtendItem,
  KeyReading,
  LockNode,
  NodeReading,
  ReadyState,
  ReleaseListener,
  RevokeRequest,
} from './lock-node';
export { NodeFailures } from './node-failures';
export { NodeContractError, callNode, checkedAcquireReply, checkedCount, checkedFlag } from './node-contract';
