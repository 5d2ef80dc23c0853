import type { Lock } from '../../lib';
import { VirtualClock } from './virtual-clock';
import { MemoryNode, virtualCore } from './virtual-nodes';

/**
 * The watchdog's timing on a virtual clock and in-memory nodes (moved from batched-renewal.spec.ts, where they
 * slept on the real clock over real nodes): losses at each lock's own deadline, deadlines moved by a shorter
 * extend, batches still in flight when the lock is extended by hand or released. "No quorum answers" is two
 * silent nodes of three (a killed and a paused one there).
 */
/** Advances `clock` 1 ms at a time until every node received the renewal's batch (two thirds of the ttl left). */
async function untilBatchSent(clock: VirtualClock, nodes: MemoryNode[]): Promise<void> {
  while (nodes.some((node) => node.batches === 0)) await clock.advance(1);
}

describe('renewal deadlines and batches in flight (virtual clock, in-memory nodes)', () => {
  it('control for the two next: the batch held in flight, answered, lengthens the lock and reports it extended', async () => {
    const { clock, nodes, redlock } = virtualCore();
    for (const node of nodes) node.holdBatches = true;
    const events: string[] = [];
    redlock.on('extended', () => events.push('extended'));
    const lock = await redlock.acquire('control', { ttl: 600 });
    redlock.keepAlive(lock);
    await untilBatchSent(clock, nodes);
    const before = lock.validUntil;
    for (const node of nodes) node.answerBatches();
    await clock.advance(0);
    expect(events).toEqual(['extended']);
    expect(lock.validUntil).toBeGreaterThan(before);
  });

  it('when no quorum answers, each lock is lost at its own deadline (the order of their deadlines), never before', async () => {
    const { clock, nodes, redlock } = virtualCore();
    const locks: Lock[] = [];
    const abortedAt = new Map<Lock, number>();
    for (const ttl of [700, 500, 900, 600]) {
      const lock = await redlock.acquire(`deadline:${ttl}`, { ttl });
      lock.signal.addEventListener('abort', () => abortedAt.set(lock, clock.now()));
      redlock.keepAlive(lock);
      locks.push(lock);
    }
    nodes[0].silent = true;
    nodes[1].silent = true;
    const deadlines = new Map(locks.map((lock) => [lock, lock.validUntil]));
    await clock.advance(1_300);
    expect(abortedAt.size).toBe(4);
    const byDeadline = [...locks].sort((a, b) => deadlines.get(a)! - deadlines.get(b)!);
    const byAbort = [...locks].sort((a, b) => abortedAt.get(a)! - abortedAt.get(b)!);
    expect(byAbort).toEqual(byDeadline);
    for (const lock of locks) {
      expect(abortedAt.get(lock)!).toBeGreaterThanOrEqual(deadlines.get(lock)! - 1);
      expect(String((lock.signal.reason as Error).message)).toMatch(/validity ran out/);
    }
  });

  it('a batch sent before a shorter extend by hand, and answered after it, does not lengthen the lock', async () => {
    const { clock, nodes, redlock } = virtualCore();
    for (const node of nodes) node.holdBatches = true;
    const lock = await redlock.acquire('shorter', { ttl: 600 });
    const stop = redlock.keepAlive(lock);
    await untilBatchSent(clock, nodes); // in flight, within its node timeout
    await redlock.extend(lock, 200); // sent after the batch, answered before it
    const shortened = lock.validUntil;
    expect(shortened).toBeLessThanOrEqual(clock.now() + 200);
    stop();
    for (const node of nodes) node.answerBatches(); // the batch answers: success, ttl 600
    await clock.advance(0);
    expect(lock.validUntil).toBeLessThanOrEqual(shortened);
    await redlock.release(lock);
  });

  it('a lock released while its renewal is in flight is neither lengthened nor reported extended', async () => {
    const { clock, nodes, redlock } = virtualCore();
    for (const node of nodes) node.holdBatches = true;
    const events: string[] = [];
    redlock.on('extended', () => events.push('extended'));
    redlock.on('released', () => events.push('released'));
    const lock = await redlock.acquire('released-in-flight', { ttl: 600 });
    redlock.keepAlive(lock);
    await untilBatchSent(clock, nodes); // in flight, within its node timeout
    await redlock.release(lock);
    const after = lock.remainingTime;
    for (const node of nodes) node.answerBatches();
    await clock.advance(0);
    expect(events).toEqual(['released']);
    expect(lock.remainingTime).toBeLessThanOrEqual(after);
  });

  it('keepAlive twice on one lock, one stopped: it is still renewed, and a shorter extend still moves its deadline timer', async () => {
    const { clock, nodes, redlock } = virtualCore();
    let renewed = 0;
    redlock.on('extended', () => renewed++);
    const lock = await redlock.acquire('kept-twice', { ttl: 600 });
    let abortedAfter = NaN;
    const stopA = redlock.keepAlive(lock);
    const stopB = redlock.keepAlive(lock);
    stopB();
    stopB(); // idempotent: A still keeps it
    await clock.advance(900); // past the first ttl: renewed by A
    expect(renewed).toBeGreaterThan(0);
    expect(lock.signal.aborted).toBe(false);
    await redlock.extend(lock, 300);
    const from = clock.now();
    const deadline = lock.validUntil;
    lock.signal.addEventListener('abort', () => (abortedAfter = clock.now() - from));
    nodes[0].silent = true;
    nodes[1].silent = true;
    await clock.advance(1_200);
    stopA();
    // By the 300 ms deadline, not a later one: at that deadline exactly.
    expect(abortedAfter).toBeLessThanOrEqual(300);
    expect(from + abortedAfter).toBe(deadline);
  });

  it('a logger that throws on a loss does not stop the watchdog: a later lock is still lost at its deadline', async () => {
    const { clock, nodes, redlock } = virtualCore({
      logger: {
        warn: () => {
          throw new Error('logger down');
        },
      },
    });
    const first = await redlock.acquire('throwing-logger:1', { ttl: 300 });
    const second = await redlock.acquire('throwing-logger:2', { ttl: 900 });
    redlock.keepAlive(first);
    redlock.keepAlive(second);
    nodes[0].silent = true;
    nodes[1].silent = true;
    await clock.advance(1_500);
    expect(first.signal.aborted).toBe(true);
    expect(second.signal.aborted).toBe(true);
  });

  it('a shorter extend by hand moves the deadline timer: the signal aborts at the new deadline', async () => {
    const { clock, nodes, redlock } = virtualCore();
    const lock = await redlock.acquire('moved-deadline', { ttl: 5_000 });
    let abortedAfter = NaN;
    const stop = redlock.keepAlive(lock);
    await redlock.extend(lock, 300);
    const from = clock.now();
    const deadline = lock.validUntil;
    lock.signal.addEventListener('abort', () => (abortedAfter = clock.now() - from));
    nodes[0].silent = true;
    nodes[1].silent = true; // no renewal can succeed any more
    await clock.advance(1_500);
    stop();
    // Aborted by the 300 ms deadline, not the 5 s one it had when it was kept alive.
    expect(abortedAfter).toBeLessThanOrEqual(300);
    expect(from + abortedAfter).toBe(deadline);
    expect(String((lock.signal.reason as Error).message)).toMatch(/validity ran out/);
  });
});
