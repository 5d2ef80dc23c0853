import { keepAlive } from './keep-alive';
import { VirtualClock, heldLockOn } from './virtual-clock';

describe('keepAlive renewal timing (virtual clock)', () => {
  it.each([10, 12, 20, 100, 10_000])(
    'a %i ms lock is renewed before its validity runs out, and kept',
    async (ttl) => {
      const clock = new VirtualClock();
      const validity = ttl - 2 - Math.round(ttl * 0.01); // what the drift allowance leaves
      const lock = heldLockOn(clock, ttl, validity);
      const renewals: number[] = [];
      const lost: unknown[] = [];
      const stop = keepAlive(
        lock,
        clock,
        async (held) => {
          renewals.push(clock.now());
          (held as unknown as { setDeadline(d: number): void }).setDeadline(clock.now() + validity);
          return held;
        },
        (_lock, error) => lost.push(error),
      );
      await clock.advance(ttl * 10);
      stop();
      expect(lost).toEqual([]);
      expect(renewals.length).toBeGreaterThanOrEqual(5);
      // Never a spin: at least 1 ms between renewals.
      const gaps = renewals.slice(1).map((at, i) => at - renewals[i]);
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1);
    },
  );

  it('negative control: a renewal that never answers loses the lock at its deadline', async () => {
    const clock = new VirtualClock();
    const lock = heldLockOn(clock, 10, 7);
    const lost: unknown[] = [];
    keepAlive(
      lock,
      clock,
      () => new Promise(() => undefined),
      (_lock, error) => lost.push(error),
    );
    await clock.advance(100);
    expect(lost).toHaveLength(1);
    // A 10 ms ttl never renewed: the message says the ttl is the cause and what to use instead.
    expect(String((lost[0] as Error).message)).toMatch(
      /a 10 ms ttl leaves.*at least 100 ms.*autoExtend: false/,
    );
  });

  it('a lock with a usual ttl lost at its deadline gets the plain message, and so does a short one renewed before', async () => {
    const clock = new VirtualClock();
    const lost: unknown[] = [];
    keepAlive(
      heldLockOn(clock, 1_000, 900),
      clock,
      () => new Promise(() => undefined),
      (_lock, error) => lost.push(error),
    );
    const short = heldLockOn(clock, 20, 16);
    let renewals = 0;
    keepAlive(
      short,
      clock,
      async (held) => {
        // One renewal succeeds, the next never answers.
        if (renewals++ > 0) return new Promise(() => undefined);
        (held as unknown as { setDeadline(d: number): void }).setDeadline(clock.now() + 16);
        return held;
      },
      (_lock, error) => lost.push(error),
    );
    await clock.advance(2_000);
    expect(lost.map((error) => String((error as Error).message))).toEqual([
      expect.stringMatching(/validity ran out before it could be extended\.$/),
      expect.stringMatching(/validity ran out before it could be extended\.$/),
    ]);
  });
});
