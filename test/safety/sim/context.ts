import type { Prng } from './prng';
import type { Scheduler } from './scheduler';

/** What the simulated servers, links and clients of one schedule share. */
export interface SimContext {
  readonly scheduler: Scheduler;
  readonly rng: Prng;
  /** True when the schedule records its event trace (replays and failure reports). */
  readonly tracing: boolean;
  /** Appends a line to the trace, stamped with the true time. Call only when `tracing`. */
  trace(line: string): void;
  /**
   * A short stable name for an owner value. The core draws owner values from `crypto.randomBytes`, outside
   * the seed; they are only ever compared for equality, so naming them by first appearance keeps the trace
   * (and everything else) a function of the seed.
   */
  ownerName(owner: string): string;
  /** Fault and message counters of the schedule. */
  readonly counters: SimCounters;
  /** A node's answer to a fair attempt: granted, or refused for an earlier waiter's turn (see `World`). */
  fairReply(owner: string, granted: boolean, turn: boolean): void;
}

export interface SimCounters {
  messages: number;
  lostRequests: number;
  lostReplies: number;
  faults: number;
  /** Acquire requests a node refused inside its restart-guard window, by how it decided. */
  refusedUptime: number;
  refusedDataAge: number;
  /** Requests that ran on their node after requests sent later on the same connection (reordering fault). */
  reordered: number;
  /** Steps of running nodes' clocks injected, and the `clock-step` events the clients' instances emitted. */
  clockSteps: number;
  stepsSeen: number;
  /** Fair attempts granted by a node and refused by another for an earlier waiter's turn (nodes disagreeing). */
  turnSplits: number;
}
