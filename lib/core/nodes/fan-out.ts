import type { Clock, Timer } from '../clock';
import type { NodeVote } from '../errors';
import type { RedlockEvents } from '../events';
import type { LockNode } from './lock-node';
import type { VoteOutcome } from '../votes';
import { describe } from '../messages';
import { NodeContractError, isThenable } from './node-contract';
import type { NodeClocks } from './node-clocks';
import type { NodeFailures, NodeOperation } from './node-failures';

/**
 * One node's answer in a fan-out: a value, an error, no answer within the timeout, or not awaited because
 * the outcome was already decided when the fan-out resolved.
 */
export type Answer<T> =
  | { readonly status: 'value'; readonly value: T }
  | { readonly status: 'error'; readonly error: Error }
  | { readonly status: 'timeout' }
  | { readonly status: 'pending' };

/**
 * The nodes one instance locks on, with what every operation on them uses: a value built once per instance,
 * passed to acquire, extend, release and probe.
 */
export interface NodeGroup {
  readonly nodes: readonly LockNode[];
  /** How many nodes must agree: `floor(N / 2) + 1`. */
  readonly quorum: number;
  readonly clock: Clock;
  /** Per-node timeout of lock operations, in ms. */
  readonly nodeTimeout: number;
  /** The clock-drift fraction of validity.ts. */
  readonly driftFactor: number;
  /** Where node errors and recoveries are reported (`node-error`, `node-recovered`). */
  readonly events: RedlockEvents;
  /** Which nodes are failing: reports each error and the first answer after them. */
  readonly failures: NodeFailures;
  /** The nodes' clocks as this instance sees them (steps detected), unless `detectClockSteps` is false. */
  readonly clocks?: NodeClocks;
}

/** How an operation on a {@link NodeGroup} decides (its clock, timeout and error reporting are the group's). */
export type OperationPlan<T> = Omit<FanOutPlan<T>, 'clock' | 'timeout' | 'onError' | 'method'>;

/**
 * {@link fanOut} over the group's nodes with its timeout; every node error becomes a `node-error` event.
 * `call` may resolve the node's raw reply and `check` turn it into `T` (a throw there is that node's error):
 * one promise per node instead of a checked promise chained onto the node's.
 */
export function askNodes<T, R = T>(
  group: NodeGroup,
  operation: NodeOperation,
  call: (node: LockNode, index: number) => Promise<R>,
  plan: OperationPlan<T>,
  check?: (node: LockNode, reply: R) => T,
): Promise<FanOutResult<T>> {
  const { nodes, clock, nodeTimeout: timeout } = group;
  return collect({ nodes, call, plan, clock, timeout, method: operation, group, check });
}

/** How a fan-out decides. */
export interface FanOutPlan<T> {
  readonly clock: Clock;
  /** Per-node timeout in ms; unanswered nodes count as "no" after it. */
  readonly timeout: number;
  /** How many "yes" answers decide success. Failure is decided as soon as that many can no longer come. */
  readonly needed: number;
  /** Whether a value counts as "yes". */
  isYes(value: T): boolean;
  /** Wait for every node (or the timeout) even after the outcome is known. Used by release. */
  readonly waitForAll?: boolean;
  /**
   * Once failure is certain, still wait for every node (or the timeout), so the answers say who voted yes: a
   * scheduled tick retries a split vote only, and a yes still in flight when the noes decided would hide it.
   */
  readonly settleFailure?: boolean;
  /**
   * Receives every answer that arrives after the fan-out resolved, including answers from nodes that had
   * already been counted as timed out. Straggling writes are never forgotten: the caller decides whether to
   * undo them.
   */
  onLate?(index: number, answer: Answer<T>): void;
  /** Receives each answer counted before the outcome was decided, as it arrives (release resolves at quorum). */
  onAnswer?(index: number, answer: Answer<T>): void;
  /** The LockNode method being called, for contract-violation messages. */
  readonly method?: string;
  /** Receives every node error, also late ones (for events and logs). */
  onError?(index: number, error: Error): void;
}

/** The result: per-node answers (index-aligned with the nodes) and how many said yes. */
export interface FanOutResult<T> {
  readonly answers: readonly Answer<T>[];
  readonly yes: number;
  readonly success: boolean;
}

const TIMED_OUT: Answer<never> = Object.freeze({ status: 'timeout' });
const PENDING: Answer<never> = Object.freeze({ status: 'pending' });

/**
 * Sends `call` to every node at once and resolves the moment the outcome is known: `needed` yeses, or so
 * many noes that `needed` has become impossible — without waiting for stragglers (unless `waitForAll`).
 * Never rejects: a node's rejection is that node's "no".
 */
export function fanOut<T>(
  nodes: readonly LockNode[],
  call: (node: LockNode, index: number) => Promise<T>,
  plan: FanOutPlan<T>,
): Promise<FanOutResult<T>> {
  const { clock, timeout, onError } = plan;
  return collect({ nodes, call, plan, clock, timeout, method: plan.method ?? 'call', onError });
}

/**
 * One fan-out's inputs. Node errors go to `group`'s `node-error` event (askNodes) or to `onError` (fanOut):
 * nothing is built per call for either. `check`, when given, turns each raw reply into the answer's value.
 */
interface FanOutSpec<T, R> {
  readonly nodes: readonly LockNode[];
  readonly call: (node: LockNode, index: number) => Promise<R>;
  readonly plan: OperationPlan<T>;
  readonly clock: Clock;
  readonly timeout: number;
  readonly method: string;
  readonly group?: NodeGroup;
  readonly onError?: (index: number, error: Error) => void;
  readonly check?: (node: LockNode, reply: R) => T;
}

function collect<T, R>(spec: FanOutSpec<T, R>): Promise<FanOutResult<T>> {
  return new Promise((resolve) => new FanOut(spec, resolve));
}

/** The fan-out itself: asks every node at once, counts the answers as they come, resolves once decided. */
class FanOut<T, R> {
  private readonly answers: (Answer<T> | undefined)[];
  private yes = 0;
  private no = 0;
  private done = false;
  private readonly timer: Timer;

  constructor(
    private readonly spec: FanOutSpec<T, R>,
    private readonly resolve: (result: FanOutResult<T>) => void,
  ) {
    const total = spec.nodes.length;
    this.answers = new Array(total).fill(undefined);
    this.timer = spec.clock.setTimeout(() => {
      if (!this.done) this.finish(this.yes >= spec.plan.needed, TIMED_OUT);
    }, spec.timeout);
    for (let i = 0; i < total; i++) this.ask(i);
  }

  /** Asks node `index`: a node that throws or returns a non-Promise is that node's error, never the fan-out's. */
  private ask(index: number): void {
    const { nodes, call, method, check } = this.spec;
    const node = nodes[index];
    let pending: unknown;
    try {
      pending = call(node, index);
      // Reading `then` may run a hostile getter: inside the try.
      if (!isThenable(pending)) {
        pending = Promise.reject(
          new NodeContractError(node.name, method, `returned ${describe(pending)} instead of a Promise`),
        );
      }
    } catch (error) {
      pending = Promise.reject(error);
    }
    // Promise.resolve reads `then` once more, turning a throwing getter into a rejection.
    Promise.resolve(pending as PromiseLike<R>).then(
      (reply) => {
        let value: T;
        try {
          value = check ? check(node, reply) : (reply as unknown as T);
        } catch (error) {
          return this.fail(index, error);
        }
        const failures = this.spec.group?.failures;
        if (failures && failures.failingCount > 0) failures.answered(node.name);
        this.record(index, { status: 'value', value });
      },
      (error: unknown) => this.fail(index, error),
    );
  }

  private record(index: number, answer: Answer<T>): void {
    const { plan } = this.spec;
    // Answers from nodes that already timed out, or arrive after the decision, go to onLate.
    if (this.done || this.answers[index] !== undefined) {
      plan.onLate?.(index, answer);
      return;
    }
    this.answers[index] = answer;
    plan.onAnswer?.(index, answer);
    if (answer.status === 'value' && plan.isYes(answer.value)) this.yes++;
    else this.no++;
    const total = this.answers.length;
    if (plan.waitForAll) {
      if (this.yes + this.no === total) this.finish(this.yes >= plan.needed, PENDING);
    } else if (this.yes >= plan.needed) this.finish(true, PENDING);
    else if (total - this.no < plan.needed && (!plan.settleFailure || this.yes + this.no === total))
      this.finish(false, PENDING);
  }

  private fail(index: number, error: unknown): void {
    const { group, nodes, method, onError } = this.spec;
    const cause = toError(error);
    if (group) group.failures.failed(nodes[index].name, method as NodeOperation, cause);
    else onError?.(index, cause);
    this.record(index, { status: 'error', error: cause });
  }

  private finish(success: boolean, unanswered: Answer<T>): void {
    this.done = true;
    this.timer.cancel();
    const { answers } = this;
    for (let i = 0; i < answers.length; i++) if (answers[i] === undefined) answers[i] = unanswered;
    this.resolve({ answers: answers as Answer<T>[], yes: this.yes, success });
  }
}

/** The number of yes votes that makes a majority of `total` nodes. */
export function quorumOf(total: number): number {
  return Math.floor(total / 2) + 1;
}

export function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** Per-node votes for messages and results, aligned with `nodes`; `vote` says what a value means. */
export function votesOf<T>(
  nodes: readonly LockNode[],
  answers: readonly Answer<T>[],
  vote: (value: T) => VoteOutcome,
): NodeVote[] {
  return answers.map((answer, index): NodeVote => {
    const node = nodes[index].name;
    switch (answer.status) {
      case 'value':
        return { node, ...vote(answer.value) };
      case 'error':
        return { node, outcome: 'error', error: answer.error };
      default:
        return { node, outcome: answer.status };
    }
  });
}
