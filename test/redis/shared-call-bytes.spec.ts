import { Command } from 'ioredis';
import { sharedCall } from '../../lib/redis/ioredis/command-batcher';
import { EXTEND_WRITERS_SCRIPT, extendWritersCall } from '../../lib/redis/scripts';
import { redlockOn } from '../core/helpers';
import { useRedisNodes } from '../support';

/**
 * A batched renewal's EVALSHA is built once and its bytes shared by every node it goes to (the client's
 * largest cost while it holds thousands of locks): the bytes must be exactly those ioredis writes itself.
 */
describe('a large script call is built once for all nodes', () => {
  // Owner labels are printable characters of any script: byte lengths differ from string lengths.
  const items = Array.from({ length: 40 }, (_, i) => ({
    keys: [`redlock:{zürich:${i}}`],
    owner: `v${i}:ö-€-日本:${i}`,
    ttl: 3_000,
  }));

  it("writes what ioredis' own Command writes for the same arguments", () => {
    const call = extendWritersCall(items);
    const built = sharedCall(EXTEND_WRITERS_SCRIPT, call.keys, call.args);
    const own = new Command('evalsha', [
      EXTEND_WRITERS_SCRIPT.sha,
      call.keys.length,
      ...call.keys,
      ...call.args,
    ]);
    const written = own.toWritable(undefined as never);
    expect(Buffer.isBuffer(written) ? written : Buffer.from(written)).toEqual(built.bytes);
  });

  it('builds a call once and reuses it for the next node; other arguments make another call', () => {
    const call = extendWritersCall(items);
    const first = sharedCall(EXTEND_WRITERS_SCRIPT, call.keys, call.args);
    expect(sharedCall(EXTEND_WRITERS_SCRIPT, call.keys, call.args)).toBe(first);
    // The same keys with other arguments (another owner) are another call, never the cached bytes.
    const other = extendWritersCall(items.map((item) => ({ ...item, owner: `${item.owner}-2` })));
    expect(sharedCall(EXTEND_WRITERS_SCRIPT, call.keys, other.args).bytes).not.toEqual(first.bytes);
  });

  describe('on 3 real nodes', () => {
    const nodes = useRedisNodes(3);

    it('renews 40 locks with such owner values, the same call sent to each node', async () => {
      const redlock = await redlockOn(nodes, { owner: 'zürich-ö-日本' });
      try {
        const locks = await Promise.all(items.map((_, i) => redlock.acquire(`zürich:${i}`, { ttl: 3_000 })));
        const held = locks.map((lock, i) => ({ keys: items[i].keys, owner: lock.value, ttl: 3_000 }));
        const admins = nodes.nodes.map((node) => node.redis());
        try {
          // A connection's first call of a script goes in full (EVAL); the shared bytes are for the later ones.
          await Promise.all(redlock.nodes.map((node) => node.extendMany!(held)));
          for (const admin of admins) await Promise.all(held.map((item) => admin.pexpire(item.keys[0], 100)));
          // One batch, as the renewal watchdog sends it: the same items to every node.
          const answers = await Promise.all(redlock.nodes.map((node) => node.extendMany!(held)));
          expect(answers).toEqual(nodes.nodes.map(() => held.map(() => true)));
          for (const admin of admins) {
            const ttls = await Promise.all(held.map((item) => admin.pttl(item.keys[0])));
            expect(ttls.filter((ttl) => ttl <= 1_000)).toEqual([]);
          }
        } finally {
          for (const admin of admins) admin.disconnect();
        }
        await Promise.all(locks.map((lock) => lock.release()));
      } finally {
        await redlock.quit();
      }
    });
  });
});
