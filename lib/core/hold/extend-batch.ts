import type { Timer } from '../clock';
import { LockLostError, type NodeVote } from '../errors';
import { extensionOutcome } from './extend';
import {
  type NodeGroup,
  toError,
  type ExtendItem,
  type LockNode,
  NodeContractError,
  callNode,
  checkedFlag,
} from '../nodes';
import type { Lock } from '../lock';
import * as messages from '../messages';
import { EXTENDED, NOT_OWNER } from '../votes';

/** What one lock's renewal in a batch came to: undefined when renewed, else the error `extend()` would throw. */
export type RenewalOutcome = Error | undefined;

/**
 * Renews many locks of one instance at once, each to its own ttl (docs/DESIGN.md §4): one call per node
 * (`LockNode.extendMany`, or each lock's own `extend` where a node has no batch), every node asked at once
 * and none waiting for another. Each lock is decided on its own as soon as its votes allow, exactly as
 * `extend()` decides it (extensionOutcome), with its validity counted from the batch's first send, and
 * `settle(i, outcome)` is told at once (a lock whose quorum answered waits for no straggler); unanswered
 * nodes count as "no" after the node timeout. Never throws, and settles every lock exactly once.
 */
export function extendBatch(
  group: NodeGroup,
  locks: readonly Lock[],
  settle: (index: number, outcome: RenewalOutcome) => void,
): void {
  const sent: Lock[] = [];
  const at: number[] = [];
  const items: ExtendItem[] = [];
  const now = group.clock.now();
  for (let i = 0; i < locks.length; i++) {
    const lock = locks[i];
    const refusal = refusalOf(lock, now);
    if (refusal) {
      settle(i, refusal);
      continue;
    }
    sent.push(lock);
    at.push(i);
    items.push({ keys: lock.keys, owner: lock.value, ttl: lock.ttl, readers: lock.readerKeys });
  }
  if (items.length > 0) new Batch(group, sent, items, (k, outcome) => settle(at[k], outcome));
}

/** What `extend()` refuses before asking any node (`now`: the batch's time, read once for all its locks). */
function refusalOf(lock: Lock, now: number): Error | undefined {
  if (lock.isReleased) return new LockLostError(lock.resources, messages.LOST_ALREADY_RELEASED);
  // lock.remainingTime <= 0, with the clock read once per batch.
  if (lock.lostError) return lock.lostError;
  if (lock.validUntil - now <= 0) return new LockLostError(lock.resources, messages.LOST_BEFORE_EXTEND);
  return undefined;
}

/**
 * A batch waits one node timeout per this many locks: the most locks the Redis adapter renews in one script
 * call (lib/redis/script-node/renewal-batches.ts), which a node runs one after another.
 */
const LOCKS_PER_WAIT = 250;

/** One node's answer for one lock: a flag, an error, or none yet (undefined). */
type ItemAnswer = boolean | Error | undefined;

/** One batch in flight: per-node, per-lock answers and counts; one timer for the whole batch. */
class Batch {
  /** answers[node][lock]. */
  private readonly answers: ItemAnswer[][];
  private readonly yes: Uint16Array;
  private readonly no: Uint16Array;
  private readonly decided: Uint8Array;
  private readonly sequences: Float64Array;
  private readonly start: number;
  /** Armed once every node was asked. */
  private timer: Timer | undefined;
  private undecided: number;
  private done = false;
  /** Set when the node timeout ended the batch: unanswered nodes are then timeouts, not pending. */
  private timedOut = false;

  constructor(
    private readonly group: NodeGroup,
    private readonly locks: readonly Lock[],
    items: readonly ExtendItem[],
    private readonly settle: (index: number, outcome: RenewalOutcome) => void,
  ) {
    const { nodes, clock } = group;
    const count = locks.length;
    this.answers = nodes.map(() => new Array<ItemAnswer>(count).fill(undefined));
    this.yes = new Uint16Array(count);
    this.no = new Uint16Array(count);
    this.decided = new Uint8Array(count);
    this.sequences = new Float64Array(count);
    for (let i = 0; i < count; i++) this.sequences[i] = ++locks[i].extensionsSent;
    this.undecided = count;
    // Validity counts from before the first send (docs/DESIGN.md §2, §4) ...
    this.start = clock.now();
    for (let j = 0; j < nodes.length; j++) this.ask(j, items);
    // ... and the node timeout from after the last: it bounds how long the nodes take to answer, not how long
    // this process took to write a batch of thousands of locks (tens of ms on a loaded machine, which would
    // otherwise fail whole batches whose nodes answered at once). A node runs a batch's calls one after
    // another, so the batch waits one node timeout per LOCKS_PER_WAIT locks (as long as those calls sent one
    // by one would be given). Waiting longer is safe: a lock renewed late still gets only what its validity
    // from `start` leaves (extensionOutcome: never past start + ttl, never once that is past), a lock whose
    // quorum answered is decided at once whatever the wait, and each lock's deadline timer runs on
    // regardless of renewals in flight (renewals.ts), so a slow batch never stretches a lock's validity.
    this.timer = clock.setTimeout(
      () => {
        this.timedOut = true;
        this.close();
      },
      group.nodeTimeout * Math.ceil(count / LOCKS_PER_WAIT),
    );
    // Answers always come asynchronously (promises), but never leave a timer behind a closed batch.
    if (this.done) this.timer.cancel();
  }

  /** Asks node `j`: its batch when it has one (checked, copied), else each lock's own extend as it answers. */
  private ask(j: number, items: readonly ExtendItem[]): void {
    const node = this.group.nodes[j];
    if (typeof node.extendMany === 'function') {
      callNode(node, 'extendMany', () => node.extendMany!(items))
        .then((reply) => checkedBatch(node, reply, items.length))
        .then(
          (flags) => {
            const error = flags.find((flag): flag is Error => flag instanceof Error);
            if (error) this.reported(node, error);
            else this.answered(node);
            for (let i = 0; i < flags.length; i++) this.record(j, i, flags[i]);
          },
          (error: unknown) => {
            const cause = this.reported(node, toError(error));
            for (let i = 0; i < items.length; i++) this.record(j, i, cause);
          },
        );
      return;
    }
    let reported = false;
    items.forEach((item, i) => {
      callNode(node, 'extend', () => node.extend(item.keys, item.owner, item.ttl, item.readers))
        .then((reply) => checkedFlag(node, 'extend', reply))
        .then(
          (flag) => {
            this.answered(node);
            this.record(j, i, flag);
          },
          (error: unknown) => {
            const cause = toError(error);
            // One node-error per node and batch, not one per lock.
            if (!reported) this.reported(node, cause);
            reported = true;
            this.record(j, i, cause);
          },
        );
    });
  }

  private answered(node: LockNode): void {
    const { failures } = this.group;
    if (failures.failingCount > 0) failures.answered(node.name);
  }

  private reported(node: LockNode, error: Error): Error {
    this.group.failures.failed(node.name, 'extend', error);
    return error;
  }

  private record(j: number, i: number, answer: boolean | Error): void {
    if (this.done || this.decided[i] || this.answers[j][i] !== undefined) return;
    this.answers[j][i] = answer;
    const { quorum, nodes } = this.group;
    if (answer === true) this.yes[i]++;
    else this.no[i]++;
    if (this.yes[i] >= quorum) this.decide(i, true);
    else if (nodes.length - this.no[i] < quorum) this.decide(i, false);
    if (this.undecided === 0) this.close();
  }

  private decide(i: number, success: boolean): void {
    const { group, start } = this;
    const lock = this.locks[i];
    this.decided[i] = 1;
    this.undecided--;
    let outcome: RenewalOutcome;
    try {
      outcome = extensionOutcome(group, lock, lock.ttl, start, this.sequences[i], success, this.yes[i], () =>
        this.votesOf(i),
      );
    } catch (error) {
      outcome = toError(error);
    }
    if (outcome === undefined && group.events.has('extended')) {
      group.events.emit('extended', {
        resources: lock.resources,
        remainingTime: lock.remainingTime,
        elapsed: group.clock.now() - start,
      });
    }
    this.settle(i, outcome);
  }

  /** Ends the batch: at the timeout, every lock still undecided fails with what its nodes said so far. */
  private close(): void {
    if (this.done) return;
    this.timer?.cancel();
    for (let i = 0; i < this.locks.length; i++) if (!this.decided[i]) this.decide(i, false);
    this.done = true;
  }

  /** Lock `i`'s votes, node by node (for its error's message). */
  private votesOf(i: number): NodeVote[] {
    const { nodes } = this.group;
    return this.answers.map((answers, j): NodeVote => {
      const node = nodes[j].name;
      const value = answers[i];
      if (value === undefined) return { node, outcome: this.timedOut ? 'timeout' : 'pending' };
      if (value instanceof Error) return { node, outcome: 'error', error: value };
      return { node, ...(value ? EXTENDED : NOT_OWNER) };
    });
  }
}

/** A batch reply checked and copied (what is checked is what is used: a getter is read once). */
function checkedBatch(node: LockNode, reply: unknown, count: number): (boolean | Error)[] {
  const problem = () =>
    new NodeContractError(
      node.name,
      'extendMany',
      `resolved ${Array.isArray(reply) ? `an array of ${reply.length}` : typeof reply} instead of ${count} booleans or Errors`,
    );
  if (!Array.isArray(reply) || reply.length !== count) throw problem();
  const flags = new Array<boolean | Error>(count);
  for (let i = 0; i < count; i++) {
    const flag: unknown = reply[i];
    if (typeof flag !== 'boolean' && !(flag instanceof Error)) throw problem();
    flags[i] = flag;
  }
  return flags;
}
