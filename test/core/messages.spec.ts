import { InvalidArgumentError, LockBusyError, Redlock } from '../../lib';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';

describe('messages that said the wrong thing (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeAll });
  let redlock: Redlock;

  beforeAll(async () => {
    redlock = await redlockOn(nodes);
  });

  it('a lock key holding other data without expiry is not reported as "held by another owner"', async () => {
    await Promise.all(
      nodes.nodes.map(async (node) => {
        const admin = node.redis();
        await admin.set('redlock:{cache}', 'some cached value'); // no expiry: not a lock
        admin.disconnect();
      }),
    );
    const error = (await redlock.acquire('cache', { wait: 0 }).catch((e: unknown) => e)) as LockBusyError;
    expect(error).toBeInstanceOf(LockBusyError);
    expect(
      error.votes.filter((vote) => vote.outcome === 'busy' && vote.holderTtl === -1).length,
    ).toBeGreaterThan(1);
    expect(error.message).toMatch(
      /^Lock "cache" cannot be taken: its key holds other data without an expiry/,
    );
    expect(error.message).toContain('(the key has no expiry: it holds other data, not a lock)');
    expect(error.message).toMatch(/set a distinct keyPrefix/);
    expect(error.message).not.toMatch(/held by another owner|Wait longer/);
  });

  it('a lock held by another owner still says so', async () => {
    const held = await redlock.acquire('owned', { ttl: 5_000 });
    const error = (await redlock.acquire('owned', { wait: 0 }).catch((e: unknown) => e)) as LockBusyError;
    expect(error.message).toMatch(/^Lock "owned" is held by another owner/);
    await held.release();
  });

  it('a 1 MB resource makes a short message', async () => {
    const huge = 'x'.repeat(1 << 20);
    // 1 MB per key and node: a loaded machine can take longer than the default node timeout to move it.
    const patient = await redlockOn(nodes, { nodeTimeout: 5_000 });
    const held = await patient.acquire(huge, { ttl: 10_000 });
    const error = (await patient.acquire(huge, { wait: 0 }).catch((e: unknown) => e)) as LockBusyError;
    expect(error).toBeInstanceOf(LockBusyError);
    expect(error.resources[0]).toHaveLength(1 << 20); // the error still carries the whole resource
    expect(error.message.length).toBeLessThan(1_000);
    expect(error.message).toContain(`"${'x'.repeat(100)}…"…(1048576 chars)`);
    await held.release();
  });

  it('many resources are counted, not all listed', async () => {
    const resources = Array.from({ length: 500 }, (_, i) => `r${i}`);
    const held = await redlock.acquire(resources);
    const error = (await redlock.acquire(resources, { wait: 0 }).catch((e: unknown) => e)) as LockBusyError;
    expect(error.message).toMatch(/^Lock \["r0","r1",.*"r9", …and 490 more\] is held by another owner/);
    await held.release();
  });

  it('on() refuses a misspelt event and a listener that is not a function; off() a misspelt event', () => {
    expect(() => redlock.on('aquired' as never, () => undefined)).toThrow(InvalidArgumentError);
    expect(() => redlock.on('aquired' as never, () => undefined)).toThrow(
      /^on\(\)\/off\(\): unknown event "aquired" \(a string\) \(did you mean "acquired"\?\)\. Known ones: acquired, released/,
    );
    expect(() => redlock.on('nodeError' as never, () => undefined)).toThrow(/unknown event "nodeError"/);
    expect(() => redlock.on('lost', 'log' as never)).toThrow(
      /^on\("lost", listener\): the listener must be a function, got "log" \(a string\)\./,
    );
    expect(() => redlock.off('relased' as never, () => undefined)).toThrow(/did you mean "released"/);
    const off = redlock.on('node-error', () => undefined);
    off();
  });
});
