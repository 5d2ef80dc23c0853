import type { Timer } from './clock';
import { LockLostError, type NodeVote } from './errors';
import { extensionOutcome } from './extend';
import { type NodeGroup, toError } from './fan-out';
import type { Lock } from './lock';
import type { ExtendItem, LockNode } from './lock-node';
import * as messages from './messages';
import { NodeContractError, callNode, checkedFlag } from './node-contract';

/** What one lock's renewal in a batch came to: undefined when renewed, else the error `extend()` would throw. */
export type RenewalOutcome = Error | undefined;

/** One node's answer to the whole batch: one flag or error per item, the node's error, or none yet. */
type NodeAnswer = readonly (boolean | Error)[] | Error | undefined;

/**
 * Renews many locks of one instance at once, each to its own ttl (docs/DESIGN.md §4): one call per node
 * (`LockNode.extendMany`, or each lock's own `extend` where a node has no batch), every node asked at once
 * and none waiting for another. Each lock is decided on its own quorum as soon as its votes allow, exactly as
 * `extend()` decides it (extensionOutcome), with its validity counted from the batch's first send; unanswered
 * nodes count as "no" after the node timeout. Never rejects.
 */
export function extendBatch(group: NodeGroup, locks: readonly Lock[]): Promise<RenewalOutcome[]> {
  const outcomes: RenewalOutcome[] = new Array(locks.length).fill(undefined);
  const sent: Lock[] = [];
  const at: number[] = [];
  const items: ExtendItem[] = [];
  for (let i = 0; i < locks.length; i++) {
    const lock = locks[i];
    const refusal = refusalOf(lock);
    if (refusal) {
      outcomes[i] = refusal;
      continue;
    }
    sent.push(lock);
    at.push(i);
    items.push({ keys: lock.keys, owner: lock.value, ttl: lock.ttl, readers: lock.readerKeys });
  }
  if (items.length === 0) return Promise.resolve(outcomes);
  return new Promise(
    (resolve) =>
      new Batch(group, sent, items, (decided) => {
        for (let k = 0; k < decided.length; k++) outcomes[at[k]] = decided[k];
        resolve(outcomes);
      }),
  );
}

/** What `extend()` refuses before asking any node. */
function refusalOf(lock: Lock): Error | undefined {
  if (lock.isReleased) return new LockLostError(lock.resources, messages.LOST_ALREADY_RELEASED);
  if (lock.remainingTime <= 0) {
    return lock.lostError ?? new LockLostError(lock.resources, messages.LOST_BEFORE_EXTEND);
  }
  return undefined;
}

/** One batch in flight: per-node answers, per-lock counts, one timer for the whole batch. */
class Batch {
  private readonly answers: NodeAnswer[];
  private readonly yes: Uint16Array;
  private readonly no: Uint16Array;
  private readonly outcomes: RenewalOutcome[];
  private readonly decided: Uint8Array;
  private readonly start: number;
  private readonly timer: Timer;
  private undecided: number;
  private done = false;

  constructor(
    private readonly group: NodeGroup,
    private readonly locks: readonly Lock[],
    private readonly items: readonly ExtendItem[],
    private readonly finish: (outcomes: RenewalOutcome[]) => void,
  ) {
    const { nodes, clock } = group;
    const count = locks.length;
    this.answers = new Array(nodes.length).fill(undefined);
    this.yes = new Uint16Array(count);
    this.no = new Uint16Array(count);
    this.outcomes = new Array(count).fill(undefined);
    this.decided = new Uint8Array(count);
    this.undecided = count;
    this.start = clock.now();
    this.timer = clock.setTimeout(() => this.close(true), group.nodeTimeout);
    for (let j = 0; j < nodes.length; j++) {
      const node = nodes[j];
      askNode(node, items).then(
        (reply) => this.record(j, reply),
        (error: unknown) => this.record(j, this.reported(node, toError(error))),
      );
    }
  }

  /** A node's error is reported once per batch (`node-error`), not once per lock. */
  private reported(node: LockNode, error: Error): Error {
    const { events } = this.group;
    if (events.has('node-error')) events.emit('node-error', { node: node.name, operation: 'extend', error });
    return error;
  }

  private record(index: number, answer: readonly (boolean | Error)[] | Error): void {
    if (this.done || this.answers[index] !== undefined) return;
    this.answers[index] = answer;
    const { quorum, nodes } = this.group;
    const { yes, no, decided } = this;
    for (let i = 0; i < this.locks.length; i++) {
      if (decided[i]) continue;
      if (!(answer instanceof Error) && answer[i] === true) yes[i]++;
      else no[i]++;
      if (yes[i] >= quorum) this.decide(i, true);
      else if (nodes.length - no[i] < quorum) this.decide(i, false);
    }
    if (this.undecided === 0) this.close(false);
  }

  private decide(i: number, success: boolean): void {
    const { group, start } = this;
    const lock = this.locks[i];
    this.decided[i] = 1;
    this.undecided--;
    const outcome = extensionOutcome(group, lock, lock.ttl, start, success, this.yes[i], () =>
      this.votesOf(i),
    );
    this.outcomes[i] = outcome;
    if (outcome === undefined && group.events.has('extended')) {
      const { clock } = group;
      group.events.emit('extended', {
        resources: lock.resources,
        remainingTime: lock.remainingTime,
        elapsed: clock.now() - start,
      });
    }
  }

  /** Ends the batch: at the timeout, every lock still undecided fails with what its nodes said so far. */
  private close(timedOut: boolean): void {
    if (this.done) return;
    this.done = true;
    this.timer.cancel();
    if (timedOut) {
      for (let i = 0; i < this.locks.length; i++) if (!this.decided[i]) this.decide(i, false);
    }
    this.finish(this.outcomes);
  }

  /** Lock `i`'s votes, node by node (for its error's message). */
  private votesOf(i: number): NodeVote[] {
    const { nodes } = this.group;
    return this.answers.map((answer, j): NodeVote => {
      const node = nodes[j].name;
      if (answer === undefined) return { node, outcome: this.done ? 'timeout' : 'pending' };
      const value = answer instanceof Error ? answer : answer[i];
      if (value instanceof Error) return { node, outcome: 'error', error: value };
      return { node, ...(value ? messages.EXTENDED : messages.NOT_OWNER) };
    });
  }
}

/**
 * One node's answer for every item: its batch when it has one (checked: one boolean or Error per item), each
 * lock's own extend otherwise. Always a real Promise.
 */
function askNode(node: LockNode, items: readonly ExtendItem[]): Promise<readonly (boolean | Error)[]> {
  if (typeof node.extendMany === 'function') {
    return callNode(node, 'extendMany', () => node.extendMany!(items)).then((reply) =>
      checkedBatch(node, reply, items.length),
    );
  }
  return Promise.all(
    items.map((item) =>
      callNode(node, 'extend', () => node.extend(item.keys, item.owner, item.ttl, item.readers)).then(
        (reply) => checkedFlag(node, 'extend', reply),
        toError,
      ),
    ),
  );
}

function checkedBatch(node: LockNode, reply: unknown, count: number): readonly (boolean | Error)[] {
  const ok =
    Array.isArray(reply) &&
    reply.length === count &&
    reply.every((flag) => typeof flag === 'boolean' || flag instanceof Error);
  if (!ok) {
    const shape = Array.isArray(reply) ? `an array of ${reply.length}` : typeof reply;
    throw new NodeContractError(
      node.name,
      'extendMany',
      `resolved ${shape} instead of ${count} booleans or Errors`,
    );
  }
  return reply as readonly (boolean | Error)[];
}
