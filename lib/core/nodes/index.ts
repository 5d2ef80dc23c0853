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
  PermitsReading,
  ReadyState,
  ReleaseListener,
  RevokeRequest,
} from './lock-node';
export { NodeFailures } from './node-failures';
export { CLOCK_DRIFT_RATE, CLOCK_SLACK, NodeClocks } from './node-clocks';
export type { CountedReply, NodeClockReport, SteppedGrant } from './node-clocks';
export { NodeContractError, callNode, checkedAcquireReply, checkedCount, checkedFlag } from './node-contract';
