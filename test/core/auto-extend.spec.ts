import { AcquireAbortedError, LockLostError, type RedlockOptions } from '../../lib';
import { RedlockCore } from '../../lib/core';
import { VirtualClock } from './virtual-clock';
import { MemoryNode } from './virtual-nodes';

/**
 * Renewal timing, loss signalling and abortable acquisition: timing policy, decided on a virtual clock over five
 * in-memory nodes (these tests slept on the real clock over five real nodes before; renewals against real Redis
 * are shown by events.spec.ts and batched-renewal.spec.ts). "Killed" nodes refuse every call here, a flush of
 * every node stands in for FLUSHALL (an eviction), and `clock.advance` for the work's time.
 */
function fiveNodes() {
  const clock = new VirtualClock();
  const nodes = ['a', 'b', 'c', 'd', 'e'].map((name) => new MemoryNode(`${name}:1`, clock));
  const core = (options: RedlockOptions = {}) =>
    new RedlockCore(nodes, { logger: false, restartGuard: false, ...options }, { clock });
  const valuesOf = (key: string) => nodes.map((node) => node.valueOf(key));
  const flushAll = () => nodes.forEach((node) => node.flush());
  return { clock, nodes, core, valuesOf, flushAll };
}

describe('auto-extension, loss signalling and abortable acquisition (virtual clock, 5 in-memory nodes)', () => {
  it('keeps the lock alive while the work runs several ttls, then releases it', async () => {
    const { clock, core, valuesOf } = fiveNodes();
    const redlock = core();
    const other = core();
    const seenByOther: (string | null)[] = [];
    const result = await redlock.using('long-job', { ttl: 500 }, async (lock) => {
      for (let i = 0; i < 8; i++) {
        await clock.advance(150);
        const attempt = await other.tryAcquire('long-job');
        seenByOther.push(attempt ? 'acquired' : null);
        if (attempt) await attempt.release();
      }
      expect(lock.signal.aborted).toBe(false);
      expect(lock.remainingTime).toBeGreaterThan(0);
      return 'done';
    });
    expect(result).toBe('done');
    expect(seenByOther).toEqual(Array(8).fill(null)); // 1.2 s of work under a 500 ms ttl, never free
    expect(valuesOf('redlock:{long-job}')).toEqual(Array(5).fill(null));
  });

  it('a 100 ms ttl is renewed at a bounded rate, never spinning', async () => {
    const { clock, core } = fiveNodes();
    const redlock = core();
    let renewals = 0;
    const stop = redlock.on('extended', () => renewals++);
    try {
      // 'warn', as on the real clock (where a machine stalled for longer than the ttl may rightly lose it): the
      // claim here is only about the renewal rate.
      await redlock.using('short-ttl', { ttl: 100, onLockLost: 'warn' }, () => clock.advance(1_000));
      // About one renewal per third of the ttl (~30 in 1 s); the floor keeps it far below one per millisecond.
      expect(renewals).toBeGreaterThanOrEqual(1);
      expect(renewals).toBeLessThanOrEqual(60);
    } finally {
      stop();
    }
  });

  it('the signal aborts with LockLostError as soon as a renewal finds the lock gone, and using() rejects', async () => {
    const { clock, core, flushAll } = fiveNodes();
    const warnings: string[] = [];
    const watched = core({ logger: { warn: (m) => warnings.push(m) } });
    let reason: unknown;
    let remainingAtAbort = NaN;
    const outcome = await watched
      .using('stolen', { ttl: 2_000 }, async (lock) => {
        lock.signal.addEventListener('abort', () => {
          reason = lock.signal.reason;
          remainingAtAbort = lock.validUntil - clock.now();
        });
        flushAll(); // the keys vanish (as after an eviction): the next renewal cannot succeed
        await clock.advance(1_300);
        return 'finished';
      })
      .catch((e: unknown) => e);
    expect(reason).toBeInstanceOf(LockLostError);
    // Declared lost at the first renewal (a third into the ttl), long before the validity would have run out.
    expect(remainingAtAbort).toBeGreaterThan(500);
    expect(outcome).toBeInstanceOf(LockLostError);
    expect(watched.stats.locksLost).toBe(1);
    expect(warnings.join('\n')).toMatch(/Lock "stolen" was lost/);
  });

  it('when renewals cannot reach a quorum, the signal aborts by the deadline timer when the validity runs out', async () => {
    const { clock, nodes, core } = fiveNodes();
    const redlock = core();
    let abortedAt = NaN;
    let deadline = NaN;
    const outcome = await redlock
      .using('unreachable', { ttl: 400 }, async (lock) => {
        deadline = lock.validUntil;
        lock.signal.addEventListener('abort', () => (abortedAt = clock.now()));
        for (const i of [0, 1, 2]) nodes[i].down = true; // killed: connections refused
        await clock.advance(700);
        return 'finished';
      })
      .catch((e: unknown) => e);
    expect(outcome).toBeInstanceOf(LockLostError);
    expect(abortedAt).toBeGreaterThanOrEqual(deadline - 1);
    // The abort came from the deadline timer itself (a timer fires after its time, never before).
    expect((outcome as LockLostError).message).toMatch(/validity ran out/);
  });

  it("onLockLost: 'warn' returns the work's result and logs instead", async () => {
    const { clock, core, flushAll } = fiveNodes();
    const warnings: string[] = [];
    const lenient = core({ onLockLost: 'warn', logger: { warn: (m) => warnings.push(m) } });
    const result = await lenient.using('lenient', { ttl: 1_000 }, async () => {
      flushAll();
      await clock.advance(700);
      return 42;
    });
    expect(result).toBe(42);
    expect(warnings.some((w) => /onLockLost: 'warn'/.test(w))).toBe(true);
  });

  it("the work's own error wins over a loss, and the lock is released either way", async () => {
    const { clock, core, flushAll } = fiveNodes();
    const redlock = core();
    const failure = new Error('work failed');
    const outcome = await redlock
      .using('both', { ttl: 1_000 }, async () => {
        flushAll();
        await clock.advance(700);
        throw failure;
      })
      .catch((e: unknown) => e);
    expect(outcome).toBe(failure);
  });

  it('aborting acquire() stops waiting at once and removes every key it wrote', async () => {
    const { clock, nodes, core, valuesOf } = fiveNodes();
    const redlock = core();
    // Another owner holds the resource on nodes 0-2; each attempt of ours wins nodes 3 and 4.
    for (const i of [0, 1, 2]) nodes[i].set('redlock:{contended}', 'holder', 30_000);
    const controller = new AbortController();
    const pending = redlock.acquire('contended', { wait: 20_000, signal: controller.signal });
    await clock.advance(150);
    controller.abort(new Error('shutting down'));
    // No time passes from here on: the acquisition ends on the abort itself, not on a timer.
    const error = (await pending.catch((e: unknown) => e)) as AcquireAbortedError;
    expect(error).toBeInstanceOf(AcquireAbortedError);
    expect((error.cause as Error).message).toBe('shutting down');
    await clock.advance(0); // releases sent without waiting are answered
    expect(valuesOf('redlock:{contended}')).toEqual(['holder', 'holder', 'holder', null, null]);
    // An already aborted signal sends nothing at all.
    await expect(redlock.acquire('x', { signal: controller.signal })).rejects.toBeInstanceOf(
      AcquireAbortedError,
    );
  });
});
