import Redis from 'ioredis';
import { Lock, QuorumUnavailableError, Redlock } from '../../lib';
import { NodeCommands, acquireOn, scriptOn, subscribeTo, useRedisNodes } from '../support';

/**
 * The whole lock lifecycle as a least-privilege Redis user (the ACL line README gives), and as the common
 * `+@all -@dangerous` user: INFO is denied to both, so the restart guard runs in its portable mode.
 */
const LEAST_PRIVILEGE =
  'on >lockpass ~redlock:* &redlock:* -@all +evalsha +eval +get +set +pttl +pexpire +del +exists +zadd +zrange ' +
  '+zremrangebyscore +zscore +zrem +publish +time +type +zcard +scan ' +
  '+ping +subscribe +unsubscribe +quit';
const NO_DANGEROUS = 'on >lockpass ~* &* +@all -@dangerous';

describe('ACL users (3 real nodes)', () => {
  const warnings: string[] = [];
  const logger = { warn: (message: string) => warnings.push(message) };

  const nodes = useRedisNodes(3, {
    afterEach: async () => {
      warnings.length = 0;
    },
  });

  async function asUser(name: string, rules: string): Promise<string[]> {
    for (const node of nodes.nodes) {
      const admin = node.redis();
      await admin.call('ACL', 'SETUSER', name, 'reset', ...rules.split(' '));
      await admin.quit();
    }
    return nodes.urls.map((url) => url.replace('redis://', `redis://${name}:lockpass@`));
  }

  /** On each node: how many channels the connections of ACL user `name` listen to (it has connections there). */
  async function subscriptionsOf(name: string): Promise<number[]> {
    return Promise.all(
      nodes.nodes.map(async (node) => {
        const admin = node.redis();
        try {
          const list = (await admin.client('LIST')) as string;
          const connections = list.split('\n').filter((line) => line.includes(` user=${name} `));
          if (connections.length === 0) throw new Error(`no connection of ${name} on node ${node.index}`);
          const count = (line: string, field: string) =>
            Number(new RegExp(` ${field}=(\\d+)`).exec(line)?.[1] ?? 0);
          return connections.reduce((sum, line) => sum + count(line, 'sub') + count(line, 'ssub'), 0);
        } finally {
          admin.disconnect();
        }
      }),
    );
  }

  async function lifecycle(urls: string[]) {
    const redlock = new Redlock(urls, { logger, ttl: 1_000, restartGuard: 1_000, nodeTimeout: 500 });
    const states = await redlock.connect(2_000);
    expect(states.map((s) => [s.ready, s.guardMode])).toEqual(urls.map(() => [true, 'data-age']));
    let commands: NodeCommands | undefined;
    try {
      // Fresh data (the markers are new): the portable guard refuses for its window, then the lock is granted.
      const first = await redlock.acquire('acl:1', { wait: 0 }).catch((e: unknown) => e);
      expect(first).toBeInstanceOf(QuorumUnavailableError);
      expect(
        (first as QuorumUnavailableError).votes.filter((v) => v.outcome === 'refused').length,
      ).toBeGreaterThanOrEqual(2);
      const lock = await redlock.acquire('acl:1', { wait: 3_000, fencing: true });
      expect(lock.fencingToken).toBeGreaterThan(0);
      await redlock.extend(lock, 5_000);
      expect(await redlock.tryAcquire('acl:1')).toBeNull();
      // A waiter woken by the release announcement (SUBSCRIBE and PUBLISH on redlock:* channels).
      commands = await NodeCommands.open(nodes.nodes);
      const waiter = redlock.acquire('acl:1', { wait: 5_000 });
      // Asleep until the release: it subscribed, then its attempt right after that ran (busy) on every node.
      await commands.ran(subscribeTo('redlock:{acl:1}:released'), acquireOn('redlock:{acl:1}'));
      expect((await (await redlock.release(lock)).settled).releasedOn).toBe(3);
      const next = await waiter;
      await redlock.using('acl:2', async (held: Lock) => expect(held.remainingTime).toBeGreaterThan(0));
      await redlock.release(next);
      expect(redlock.stats.wokenByRelease).toBeGreaterThanOrEqual(1);
      // Read-write locks: readers share (fenced, extended), a writer waits for them, then gets in.
      const readers = await Promise.all([
        redlock.acquire('acl:rw', { mode: 'read', fencing: true }),
        redlock.acquire('acl:rw', { mode: 'read' }),
      ]);
      await readers[0].extend(2_000);
      commands.forget();
      const writer = redlock.acquire('acl:rw', { wait: 5_000 });
      // Its first attempt ran (busy: the readers hold it) on every node before they release.
      await commands.ran(scriptOn('redlock:{acl:rw}'));
      await Promise.all(readers.map((reader) => reader.release()));
      await (await writer).release();
      const health = await redlock.probe();
      expect(health.nodes.every((n) => n.up)).toBe(true);
      // Said once, naming the nodes.
      expect(warnings.filter((w) => w.includes('portable mode'))).toHaveLength(1);
    } finally {
      commands?.close();
      await redlock.quit();
    }
  }

  it('least privilege (the ACL line README gives): acquire, fencing, extend, busy, wake-up, using, read-write, probe', async () => {
    await lifecycle(await asUser('locker', LEAST_PRIVILEGE));
  });

  it('least privilege: inspect, holders and revoke (the holder hears it on the revocation channel)', async () => {
    const urls = await asUser('locker', LEAST_PRIVILEGE);
    const operator = new Redlock(urls, { logger: false, restartGuard: false, nodeTimeout: 500 });
    const holder = new Redlock(urls, {
      logger: false,
      restartGuard: false,
      nodeTimeout: 500,
      owner: 'acl-holder',
    });
    try {
      await Promise.all([operator.connect(2_000), holder.connect(2_000)]);
      const lock = await holder.acquire('acl:operated', { ttl: 30_000 });
      const inspection = await operator.inspect('acl:operated');
      expect(inspection.nodes.map((node) => node.error)).toEqual([undefined, undefined, undefined]);
      expect(inspection.holders.map((h) => [h.owner, h.nodes])).toEqual([['acl-holder', 3]]);
      expect((await operator.holders({ prefix: 'acl:' })).map((i) => i.resource)).toEqual(['acl:operated']);
      const aborted = new Promise((resolve) =>
        lock.signal.addEventListener('abort', resolve, { once: true }),
      );
      expect((await operator.revoke('acl:operated', { reason: 'acl test' })).revokedOn).toBe(3);
      await aborted;
      expect(lock.lostError?.name).toBe('LockRevokedError');
    } finally {
      await Promise.all([operator.quit(), holder.quit()]);
    }
  });

  it('negative control: a holder denied the revocation channel hears nothing; it learns of it at its next extend', async () => {
    const operator = new Redlock(await asUser('locker', LEAST_PRIVILEGE), {
      logger: false,
      restartGuard: false,
    });
    // The same rights without any channel: SUBSCRIBE is refused, so the announcement cannot reach it.
    const deaf = await asUser('deaf', LEAST_PRIVILEGE.replace(' &redlock:*', ''));
    const holder = new Redlock(deaf, { logger: false, restartGuard: false, nodeTimeout: 500 });
    try {
      await Promise.all([operator.connect(2_000), holder.connect(2_000)]);
      const lock = await holder.acquire('acl:deaf', { ttl: 30_000 });
      expect((await operator.revoke('acl:deaf', { reason: 'control' })).revokedOn).toBe(3);
      // Its PUBLISH ran on every node, where no connection of the holder listened to any channel: the message
      // reached nobody of it (a node delivers to its subscribers of the moment, never later).
      expect(await subscriptionsOf('deaf')).toEqual([0, 0, 0]);
      expect(lock.signal.aborted).toBe(false); // the keys are gone, and nothing told it
      expect((await operator.inspect('acl:deaf')).state).toBe('free');
      await expect(holder.extend(lock)).rejects.toThrow(/too few nodes still hold it/);
    } finally {
      await Promise.all([operator.quit(), holder.quit()]);
    }
  });

  it('a revocation subscription refused at connect is tried again: once the channel is granted, the holder hears it', async () => {
    const operator = new Redlock(await asUser('locker', LEAST_PRIVILEGE), {
      logger: false,
      restartGuard: false,
    });
    const late = await asUser('late', LEAST_PRIVILEGE.replace(' &redlock:*', ''));
    const holder = new Redlock(late, { logger: false, restartGuard: false, nodeTimeout: 500 });
    try {
      await Promise.all([operator.connect(2_000), holder.connect(2_000)]); // the holder's SUBSCRIBE is refused
      const commands = await NodeCommands.open(nodes.nodes);
      for (const node of nodes.nodes) {
        const admin = node.redis();
        await admin.call('ACL', 'SETUSER', 'late', '&redlock:*'); // the channel is granted after connect
        await admin.quit();
      }
      // A retry (every second) subscribes: on every node, the holder's SUBSCRIBE ran (a refused one is not shown).
      await commands.ran(subscribeTo('redlock:!revoked'));
      commands.close();
      expect(await subscriptionsOf('late')).toEqual([1, 1, 1]); // what the deaf holder's control shows as 0
      const lock = await holder.acquire('acl:late', { ttl: 30_000 });
      const aborted = new Promise((resolve) =>
        lock.signal.addEventListener('abort', resolve, { once: true }),
      );
      await operator.revoke('acl:late', { reason: 'granted later' });
      await aborted;
      expect(lock.lostError?.name).toBe('LockRevokedError');
    } finally {
      await Promise.all([operator.quit(), holder.quit()]);
    }
  });

  it('+@all -@dangerous: the same, INFO denied', async () => {
    await lifecycle(await asUser('app', NO_DANGEROUS));
  });

  it('portable mode: a node that lost its data refuses for one window, then takes part again', async () => {
    const urls = await asUser('app', NO_DANGEROUS);
    const redlock = new Redlock(urls, { logger, ttl: 1_000, restartGuard: 1_000, nodeTimeout: 500 });
    try {
      await redlock.connect(2_000);
      await redlock.release(await redlock.acquire('loss', { wait: 3_000 }));
      // FLUSHALL on two nodes: what an empty restart leaves (the ACL user survives; a restart would lose it).
      for (const node of nodes.nodes.slice(0, 2)) {
        const admin = node.redis();
        await admin.flushall();
        await admin.quit();
      }
      const refused = await redlock.acquire('loss', { wait: 0 }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(QuorumUnavailableError);
      const votes = (refused as QuorumUnavailableError).votes;
      expect(votes.filter((v) => v.outcome === 'refused')).toHaveLength(2);
      expect((refused as QuorumUnavailableError).retryAfter).toBeGreaterThan(0);
      // Negative control: the guard off grants at once on the same nodes.
      const unguarded = new Redlock(urls, { logger, restartGuard: false });
      await unguarded.connect(2_000);
      await unguarded.release(await unguarded.acquire('loss-control', { wait: 0 }));
      await unguarded.quit();
      // Waited out within `wait`.
      const lock = await redlock.acquire('loss', { wait: 3_000 });
      await redlock.release(lock);
    } finally {
      await redlock.quit();
    }
  });

  it('the admin can see what the library wrote: only redlock:* keys', async () => {
    const urls = await asUser('locker', LEAST_PRIVILEGE);
    const redlock = new Redlock(urls, { logger, ttl: 1_000, restartGuard: 1_000 });
    await redlock.connect(2_000);
    await redlock.release(await redlock.acquire('only-prefixed', { wait: 3_000 }));
    await redlock.quit();
    const admin = new Redis(nodes.urls[0]);
    const keys = await admin.keys('*');
    await admin.quit();
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((key) => key.startsWith('redlock:'))).toBe(true);
  });
});
