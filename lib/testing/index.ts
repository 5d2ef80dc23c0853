/**
 * In-memory lock nodes for tests without Redis (`memoryNodes()`), and the model of the lock scripts they run
 * (shared with the simulation, checked against real Redis by the differential test).
 */
export { memoryNodes } from './memory-nodes';
export type { MemoryNodesOptions } from './memory-nodes';
export { MemoryNode } from './memory-node';
export { ScriptModel } from './script-model';
export type { ModelClock, ModelSpec } from './model-server';
export type { GuardArgs } from './restart-guard';
export type { Subscription } from './pub-sub';
