import type { Redis } from 'ioredis';
import { ForeignDataError, QuorumUnavailableError } from '../../lib';
import { acquireReplyOf } from '../../lib/redis/scripts';
import { ACQUIRE_SCRIPT, acquireCall } from '../../lib/redis/scripts';
import { nodeError } from '../../lib/redlock.messages';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';

/** The guard's window here: short, so nodes a couple of seconds old are past it. */
const GUARD = { ttl: 100, restartGuard: 100 };

/**
 * The restart guard's markers (`<keyPrefix>!boot`, `<keyPrefix>!boot:since`) holding another application's
 * data (docs/DESIGN.md §6): never overwritten; the node's vote is a ForeignDataError naming the key, what it
 * holds and the fix, and the refusal does not blame a lock key or the network.
 */
describe('restart-guard markers holding data that is not ours (3 real nodes)', () => {
  // INFO counts whole seconds, less one: the fresh nodes grow past the short window first.
  const nodes = useRedisNodes(3, { afterEach: closeAll, pastGuard: GUARD.restartGuard });

  /** Runs `work` with an admin connection to each of the first `count` nodes. */
  async function onNodes<T>(count: number, work: (admin: Redis) => Promise<T>): Promise<T[]> {
    return Promise.all(
      nodes.nodes.slice(0, count).map(async (node) => {
        const admin = node.redis();
        try {
          return await work(admin);
        } finally {
          admin.disconnect();
        }
      }),
    );
  }

  it("a boot marker that is another application's hash: named, left untouched, no lock key blamed", async () => {
    await onNodes(2, (admin) => admin.hset('redlock:!boot', 'user', '42'));
    const redlock = await redlockOn(nodes, GUARD);
    const error = (await redlock.acquire('report', { wait: 0 }).catch((e: unknown) => e)) as Error;

    expect(error).toBeInstanceOf(QuorumUnavailableError);
    const votes = (error as QuorumUnavailableError).votes;
    for (const vote of votes.slice(0, 2)) {
      expect(vote.outcome).toBe('error');
      expect(vote.error).toBeInstanceOf(ForeignDataError);
      expect(vote.error).toMatchObject({ key: 'redlock:!boot', found: 'hash', node: vote.node });
    }
    expect(error.message).toContain(
      `the restart guard's boot marker "redlock:!boot" holds a hash: data that is not this library's ` +
        '(another application uses that key name), so this node takes no lock rather than overwrite it. Set a ' +
        'keyPrefix that no other application uses, or, if that data is not needed, delete the key on this node.',
    );
    expect(error.message).toContain("A restart-guard marker key holds another application's data");
    expect(error.message).not.toMatch(/lock key|WRONGTYPE|reachable and healthy/);
    expect(await onNodes(2, (admin) => admin.hgetall('redlock:!boot'))).toEqual([
      { user: '42' },
      { user: '42' },
    ]);
  });

  it('a boot marker holding a string of another form: refused the same way, the string kept', async () => {
    const foreign = '{"theme":"dark"}';
    await onNodes(2, (admin) => admin.set('redlock:!boot', foreign));
    const redlock = await redlockOn(nodes, GUARD);
    const error = (await redlock.acquire('report', { wait: 0 }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(QuorumUnavailableError);
    expect(error.message).toContain(`boot marker "redlock:!boot" holds a string that is not a marker`);
    expect(await onNodes(2, (admin) => admin.get('redlock:!boot'))).toEqual([foreign, foreign]);
  });

  it('also before the client learnt the run_id, and for the data-age marker in portable mode', async () => {
    const admin = nodes.nodes[0].redis();
    try {
      await admin.set('redlock:!boot', 'not a marker');
      await admin.rpush('redlock:!boot:since', 'a', 'list');
      const request = {
        keys: ['redlock:{r}'],
        fenceKeys: [],
        owner: 'o',
        ttl: 1_000,
        guardWindow: 100,
        guardKey: 'redlock:!boot',
      };
      const answer = async (runId: string, portable: boolean) => {
        const { keys, args } = acquireCall(request, runId, portable);
        const raw = await admin.eval(ACQUIRE_SCRIPT.source, keys.length, ...keys, ...args);
        try {
          return acquireReplyOf('node0', raw, false);
        } catch (error) {
          return error;
        }
      };
      // Precise mode, run_id not known yet: the boot marker is checked before INFO would overwrite it.
      expect(await answer('', false)).toMatchObject({ key: 'redlock:!boot', found: 'string' });
      // Portable mode never touches the boot marker; its data-age marker is a list here.
      const portable = (await answer('', true)) as ForeignDataError;
      expect(portable).toBeInstanceOf(ForeignDataError);
      expect(portable).toMatchObject({ key: 'redlock:!boot:since', found: 'list' });
      expect(portable.message).toMatch(
        /data-age marker "redlock:!boot:since" holds a list: .*delete the key on this node \(without its data-age marker, the node then refuses locks for one restart-guard window/,
      );
      expect(await admin.get('redlock:{r}')).toBeNull();
      expect(await admin.get('redlock:!boot')).toBe('not a marker');
      expect(await admin.lrange('redlock:!boot:since', 0, -1)).toEqual(['a', 'list']);
    } finally {
      admin.disconnect();
    }
  });

  it('the fix works: with the key deleted (or another keyPrefix) the lock is taken', async () => {
    await onNodes(3, (admin) => admin.hset('redlock:!boot', 'user', '42'));
    const other = await redlockOn(nodes, { ...GUARD, keyPrefix: 'orders:' });
    await (await other.acquire('report', { wait: 3_000 })).release();
    await onNodes(3, (admin) => admin.del('redlock:!boot'));
    const redlock = await redlockOn(nodes, GUARD);
    await (await redlock.acquire('report', { wait: 3_000 })).release();
    expect(await onNodes(3, (admin) => admin.get('redlock:!boot'))).toEqual([
      expect.stringMatching(/^[0-9a-f]{40}:\d+$/),
      expect.stringMatching(/^[0-9a-f]{40}:\d+$/),
      expect.stringMatching(/^[0-9a-f]{40}:\d+$/),
    ]);
  });

  it("negative control: the marker's earlier form (a bare run_id) is ours, replaced and not refused", async () => {
    await onNodes(3, (admin) => admin.set('redlock:!boot', 'f'.repeat(40)));
    const redlock = await redlockOn(nodes, GUARD);
    await (await redlock.acquire('report', { wait: 3_000 })).release();
    for (const marker of await onNodes(3, (admin) => admin.get('redlock:!boot'))) {
      expect(marker).toMatch(/^[0-9a-f]{40}:\d+$/);
    }
  });

  it("Nest's node warning for it names the fix, not the node's address or reachability", () => {
    const error = new ForeignDataError('10.0.0.1:6379', 'redlock:!boot', 'hash');
    const line = nodeError('10.0.0.1:6379', 'acquire', error);
    expect(line).toMatch(/^Redis node 10\.0\.0\.1:6379 failed an acquire: the restart guard's boot marker/);
    expect(line).toMatch(/delete the key on this node\. Until then locks need a majority of the other nodes/);
    expect(line).not.toMatch(/address|reachable/);
    // The data-age marker's message says what deleting it costs.
    expect(new ForeignDataError('n:1', 'app:!boot{7}:since', 'string').message).toMatch(
      /^the restart guard's data-age marker "app:!boot\{7\}:since" holds a string that is not a marker: .*one restart-guard window/,
    );
  });
});
