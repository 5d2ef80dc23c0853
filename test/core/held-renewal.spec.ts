import { Lock, LockLostError } from '../../lib';
import type { LockNode } from '../../lib';
import { RedlockEvents } from '../../lib/core/events';
import { extendBatch, type RenewalOutcome } from '../../lib/core/hold/extend-batch';
import type { NodeGroup } from '../../lib/core/nodes/fan-out';
import { NodeFailures } from '../../lib/core/nodes/node-failures';
import type { ExtendItem } from '../../lib/core/nodes/lock-node';
import { Renewals } from '../../lib/core/hold/renewals';
import { validUntil } from '../../lib/core/validity';
import { VirtualClock, heldLockOn } from './virtual-clock';

/**
 * The held-lock cost changes of #21 (docs/BENCHMARKS.md, held locks), on a virtual clock: a batch's node
 * timeout runs from after its sends and grows with its size; a renewed lock stays queued at its older
 * deadline, and is still declared lost exactly at its own deadline.
 */

/** A node whose batch answers come when `answer()` is called (all true), after `cost` ms spent sending. */
class HeldNode implements LockNode {
  readonly pending: (() => void)[] = [];
  constructor(
    readonly name: string,
    private readonly clock: VirtualClock,
    private readonly cost = 0,
  ) {}
  acquire(): never {
    throw new Error('not used');
  }
  fence(): never {
    throw new Error('not used');
  }
  release(): never {
    throw new Error('not used');
  }
  extend(): Promise<boolean> {
    return Promise.resolve(true);
  }
  extendMany(items: readonly ExtendItem[]): Promise<boolean[]> {
    // Writing the batch takes time on this process's clock (a loaded machine).
    this.clock.time += this.cost;
    return new Promise((resolve) => this.pending.push(() => resolve(items.map(() => true))));
  }
  answer(): void {
    for (const reply of this.pending.splice(0)) reply();
  }
  async connect(): Promise<void> {}
  async close(): Promise<void> {}
}

function groupOf(clock: VirtualClock, nodes: LockNode[]): NodeGroup {
  const events = new RedlockEvents();
  return {
    nodes,
    quorum: 2,
    clock,
    nodeTimeout: 50,
    driftFactor: 0.01,
    events,
    failures: new NodeFailures(events, clock),
  };
}

describe('batched renewal: the node timeout of a batch', () => {
  it('runs from after the sends: a batch that took 40 ms per node to write is still answered in time', async () => {
    const clock = new VirtualClock();
    const nodes = [0, 1, 2].map((j) => new HeldNode(`n${j}`, clock, 40));
    const locks = Array.from({ length: 10 }, (_, i) => heldLockOn(clock, 10_000, 9_000, i));
    const outcomes: RenewalOutcome[] = [];
    extendBatch(groupOf(clock, nodes), locks, (i, outcome) => (outcomes[i] = outcome));
    // 120 ms went into writing; the nodes answer 45 ms later (within the 50 ms timeout of one call).
    expect(clock.now()).toBe(120);
    await clock.advance(45);
    nodes.forEach((node) => node.answer());
    await clock.advance(0);
    expect(outcomes).toHaveLength(10);
    expect(outcomes.every((outcome) => outcome === undefined)).toBe(true);
    // Validity still counts from before the first send (time 0), not from after the writing.
    for (const lock of locks) expect(lock.validUntil).toBe(validUntil(0, 10_000, 0.01));
  });

  it('grows by one node timeout per 250 locks, and a small batch still ends at the node timeout', async () => {
    for (const [count, answeredAt, renewed] of [
      [100, 60, false],
      [600, 140, true],
      [600, 160, false],
    ] as const) {
      const clock = new VirtualClock();
      const nodes = [0, 1, 2].map((j) => new HeldNode(`n${j}`, clock));
      const locks = Array.from({ length: count }, (_, i) => heldLockOn(clock, 10_000, 9_000, i));
      const outcomes: RenewalOutcome[] = [];
      extendBatch(groupOf(clock, nodes), locks, (i, outcome) => (outcomes[i] = outcome));
      await clock.advance(answeredAt);
      nodes.forEach((node) => node.answer());
      await clock.advance(0);
      expect(outcomes).toHaveLength(count);
      // 600 locks: three node timeouts (150 ms); 100 locks: one (50 ms).
      expect(outcomes.every((outcome) => outcome === undefined)).toBe(renewed);
      if (!renewed) for (const lock of locks) expect(lock.validUntil).toBe(9_000);
    }
  });
});

describe('Renewals: one object per held lock, deadlines queued lazily yet exact', () => {
  it('locks renewed many times are never lost; when renewals stop succeeding each is lost at its own deadline', async () => {
    const clock = new VirtualClock();
    let failing = false;
    const renewedAt: number[] = [];
    const lost: [Lock, number][] = [];
    const renewals = new Renewals(
      clock,
      (locks, settle) => {
        const start = clock.now();
        locks.forEach((lock, i) => {
          if (failing) return settle(i, new Error('no quorum'));
          renewedAt.push(start);
          lock.extensionApplied = ++lock.extensionsSent;
          lock.setDeadline(start + lock.ttl - 100);
          settle(i, undefined);
        });
      },
      (lock) => lost.push([lock, clock.now()]),
    );
    // 300 locks granted 10 ms apart.
    const locks: Lock[] = [];
    for (let i = 0; i < 300; i++) {
      locks.push(heldLockOn(clock, 3_000, 2_900, i));
      renewals.add(locks[i]);
      await clock.advance(10);
    }
    await clock.advance(20_000);
    expect(lost).toEqual([]);
    // Each lock renewed about every second (two thirds of 3 s left), in batches.
    expect(renewedAt.length).toBeGreaterThan(300 * 15);
    failing = true;
    const deadlines = new Map(locks.map((lock) => [lock, lock.validUntil]));
    await clock.advance(5_000);
    expect(lost).toHaveLength(300);
    for (const [lock, at] of lost) {
      expect(at).toBe(deadlines.get(lock));
      expect(lock.lostError).toBeInstanceOf(LockLostError);
    }
    expect(renewals.size).toBe(0);
  });

  it('a deadline moved earlier by hand after renewals is kept exactly', async () => {
    const clock = new VirtualClock();
    const lost: number[] = [];
    const renewals = new Renewals(
      clock,
      (locks, settle) =>
        locks.forEach((lock, i) => {
          lock.extensionApplied = ++lock.extensionsSent;
          lock.setDeadline(clock.now() + lock.ttl - 100);
          settle(i, undefined);
        }),
      () => lost.push(clock.now()),
    );
    const lock = heldLockOn(clock, 3_000, 2_900, 0);
    renewals.add(lock);
    await clock.advance(2_500);
    // Renewed twice by now; a shorter extend by hand sets a deadline 50 ms from now.
    const shortened = clock.now() + 50;
    lock.setDeadline(shortened);
    // Its renewal (due later) would not come in time: it is lost at that deadline exactly.
    await clock.advance(1_000);
    expect(lost[0]).toBe(shortened);
  });
});
