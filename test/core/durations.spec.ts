import { InvalidArgumentError, Redlock } from '../../lib';
import { countingNodes } from './helpers';
import { longTimeout, withTimeout } from '../../lib/core/clock';
import { resolveModuleOptions } from '../../lib/redlock.module-options';

/** Node fires a delay above this after 1 ms. */
const MAX = 2 ** 31 - 1;

const TOO_LONG = /longer than 2147483647 ms \(about 24\.8 days\), the longest delay a Node timer can wait/;

describe('durations above 2^31 − 1 ms are refused, everywhere the library takes one (a ttl excepted)', () => {
  it.each([
    ['nodeTimeout', { nodeTimeout: 2 ** 31 }],
    ['wait', { wait: 2 ** 31 }],
    ['retryDelay', { retryDelay: 2 ** 31, maxRetryDelay: 2 ** 31 }],
    ['maxRetryDelay', { maxRetryDelay: 2 ** 31 }],
    ['restartGuard', { restartGuard: 2 ** 31 }],
  ])('constructor option %s', (name, options) => {
    const make = () => new Redlock(countingNodes(), { logger: false, ...options });
    expect(make).toThrow(InvalidArgumentError);
    expect(make).toThrow(new RegExp(`^${name} of 2147483648 ms|^${name} of 4294967296 ms`));
    expect(make).toThrow(TOO_LONG);
  });

  it('the limit itself is accepted, and so is wait: Infinity', () => {
    for (const name of ['ttl', 'nodeTimeout', 'wait', 'maxRetryDelay', 'restartGuard']) {
      expect(() => new Redlock(countingNodes(), { logger: false, [name]: MAX })).not.toThrow();
    }
    expect(() => new Redlock(countingNodes(), { logger: false, wait: Infinity })).not.toThrow();
  });

  it('per-call ttl and wait, extend() and using(), before any node is asked', async () => {
    const nodes = countingNodes();
    const redlock = new Redlock(nodes, { logger: false });
    const BEYOND_EXACT = /^ttl of 9007199254740992 ms is beyond what JavaScript keeps exact/;
    await expect(redlock.acquire('t', { ttl: 2 ** 53 })).rejects.toThrow(BEYOND_EXACT);
    await expect(redlock.tryAcquire('t', { ttl: 2 ** 53 })).rejects.toThrow(BEYOND_EXACT);
    await expect(redlock.acquire('t', { wait: 2 ** 31 })).rejects.toThrow(/^wait of 2147483648 ms.*Infinity/);
    await expect(redlock.using('t', { ttl: 2 ** 53 }, async () => 1)).rejects.toThrow(BEYOND_EXACT);
    expect(nodes.map((node) => node.calls)).toEqual([0, 0, 0]);
    const lock = await redlock.acquire('t', { wait: Infinity });
    const before = nodes.map((node) => node.calls);
    await expect(redlock.extend(lock, 2 ** 53)).rejects.toThrow(BEYOND_EXACT);
    expect(nodes.map((node) => node.calls)).toEqual(before);
    await lock.release();
  });

  it("a ttl may be as long as Redis' PX allows and JavaScript keeps exact: node-redlock's idioms", async () => {
    // node-redlock's tests lock for Number.MAX_SAFE_INTEGER / 10 ms: "never expires while the test runs".
    for (const ttl of [2 ** 31, 2 ** 32, Math.floor(Number.MAX_SAFE_INTEGER / 10), Number.MAX_SAFE_INTEGER]) {
      const redlock = new Redlock(countingNodes(), { logger: false, ttl, restartGuard: false });
      const lock = await redlock.acquire('long', { ttl });
      expect(lock.ttl).toBe(ttl);
      expect(lock.remainingTime).toBeGreaterThan(ttl * 0.98);
      await redlock.extend(lock, ttl);
      await lock.release();
    }
    expect(() => new Redlock(countingNodes(), { logger: false, ttl: 1.5e16 })).toThrow(InvalidArgumentError);
  });

  it.each([
    ['connect', 2 ** 31],
    ['probe', 2 ** 31],
    ['quit', 2 ** 31],
    ['connect', 1.5],
    ['probe', -1],
    ['quit', -1],
    ['connect', '1000'],
  ])('%s(%p) rejects with the limit', async (method, timeout) => {
    const redlock = new Redlock(countingNodes(), { logger: false });
    const call = (redlock as unknown as Record<string, (t: unknown) => Promise<unknown>>)[method];
    const error = await call.call(redlock, timeout).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `^${method}\\(\\) timeout (must be a (positive )?whole number of milliseconds|of \\d+ ms is longer than 2147483647 ms)`,
      ),
    );
  });

  it.each(['connectTimeout', 'shutdownTimeout'])('module option %s', (name) => {
    expect(() => resolveModuleOptions({ nodes: countingNodes(), logger: false, [name]: 2 ** 31 })).toThrow(
      new RegExp(`Invalid RedlockModule options: ${name} of 2147483648 ms is longer than 2147483647 ms`),
    );
  });
});

describe('timers longer than 2^31 − 1 ms are armed in steps, Infinity arms none', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('longTimeout fires after the whole delay, not after 1 ms', () => {
    const fired = jest.fn();
    const spy = jest.spyOn(global, 'setTimeout');
    longTimeout(fired, 2 ** 32);
    // Never a delay Node would turn into 1 ms.
    for (const [, ms] of spy.mock.calls) expect(ms).toBeLessThanOrEqual(MAX);
    jest.advanceTimersByTime(MAX);
    expect(fired).not.toHaveBeenCalled();
    jest.advanceTimersByTime(2 ** 32 - MAX - 1);
    expect(fired).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
    spy.mockRestore();
  });

  it('a cancelled long timer never fires; Infinity arms nothing', () => {
    const fired = jest.fn();
    const cancel = longTimeout(fired, 2 ** 33);
    jest.advanceTimersByTime(MAX + 10);
    cancel();
    jest.advanceTimersByTime(2 ** 33);
    expect(fired).not.toHaveBeenCalled();
    longTimeout(fired, Infinity);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('withTimeout(…, Infinity) never times out', async () => {
    let settled = false;
    void withTimeout(new Promise(() => undefined), Infinity, () => new Error('timed out')).catch(
      () => (settled = true),
    );
    expect(jest.getTimerCount()).toBe(0);
    jest.advanceTimersByTime(2 ** 31 + 10);
    await Promise.resolve();
    expect(settled).toBe(false);
  });
});
