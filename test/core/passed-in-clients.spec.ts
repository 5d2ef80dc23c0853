import { Redlock } from '../../lib';
import { useRedisNodes } from '../support';

describe('clients passed in (1 real node)', () => {
  const nodes = useRedisNodes(1, { flushAfterEach: false });

  it('1,000 constructors that throw after taking the client leave no listener on it', async () => {
    const client = nodes.nodes[0].redis();
    await client.ping();
    const before = Object.fromEntries(
      client.eventNames().map((event) => [event, client.listenerCount(event)]),
    );
    try {
      for (let i = 0; i < 1_000; i++) {
        expect(() => new Redlock([client, client], { logger: false })).toThrow(/are the same node/);
        expect(() => new Redlock([client, 42 as never], { logger: false })).toThrow(/nodes\[1\] must be/);
      }
      const after = Object.fromEntries(
        client.eventNames().map((event) => [event, client.listenerCount(event)]),
      );
      expect(after).toEqual(before);
    } finally {
      client.disconnect();
    }
  });

  it('1,000 instances over one client, each quit(), leave no listener on it', async () => {
    const client = nodes.nodes[0].redis();
    await client.ping();
    const before = Object.fromEntries(
      client.eventNames().map((event) => [event, client.listenerCount(event)]),
    );
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      let locked = 0;
      for (let i = 0; i < 1_000; i++) {
        const redlock = new Redlock([client], { logger: false, restartGuard: false });
        // Every tenth instance locks (and waits once on a busy lock), so the paths that add listeners run too.
        if (i % 10 === 0) {
          const lock = await redlock.acquire(`leak:${i}`, { ttl: 1_000 });
          expect(await redlock.tryAcquire(`leak:${i}`)).toBeNull();
          if (i % 100 === 0)
            await expect(redlock.acquire(`leak:${i}`, { wait: 30 })).rejects.toThrow(/held by/);
          await lock.release();
          locked++;
        }
        await redlock.quit();
      }
      expect(locked).toBe(100);
      expect(client.listenerCount('ready')).toBe(before.ready ?? 0);
      expect(client.listenerCount('close')).toBe(before.close ?? 0);
      const after = Object.fromEntries(
        client.eventNames().map((event) => [event, client.listenerCount(event)]),
      );
      expect(after).toEqual(before);
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
      expect(client.status).toBe('ready');
    } finally {
      process.off('warning', onWarning);
      client.disconnect();
    }
  });
});
