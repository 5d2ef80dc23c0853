import { ForeignDataError, LockLostError, QuorumUnavailableError, Redlock } from '../../lib';
import { IoredisLockNode } from '../../lib/redis';
import { NodeCommands, RedisNodes, useRedisNodes } from '../support';
import { closeAll, redlockOn, valuesOnNodes } from './helpers';
import { watchKeyEnds } from './keyspace';

describe('Redlock operations on 5 real nodes', () => {
  const nodes = useRedisNodes(5, {
    afterEach: async () => {
      for (const node of nodes.nodes) if (!node.running) await node.start();
    },
    afterAll: closeAll,
  });
  let redlock: Redlock;

  beforeAll(async () => {
    redlock = await redlockOn(nodes);
  });

  async function ttlsOnNodes(key: string): Promise<number[]> {
    return Promise.all(
      nodes.nodes.map(async (node) => {
        const admin = node.redis();
        try {
          return await admin.pttl(key);
        } finally {
          admin.disconnect();
        }
      }),
    );
  }

  it('writes the owner value under the prefixed key on every node and removes it on release', async () => {
    const lock = await redlock.acquire('order:1');
    // 16 random bytes (base64url), then when the attempt was sent (ms, base 36) and the owner label.
    expect(lock.value).toMatch(/^[A-Za-z0-9_-]{22}:[0-9a-z]+:.+:\d+$/);
    expect(await valuesOnNodes(nodes, 'redlock:{order:1}')).toEqual(Array(5).fill(lock.value));
    const result = await lock.release();
    // Resolved once a quorum deleted the key; every node's answer comes on `settled`.
    expect(result.releasedOn).toBeGreaterThanOrEqual(3);
    expect(await result.settled).toMatchObject({ releasedOn: 5 });
    expect(await valuesOnNodes(nodes, 'redlock:{order:1}')).toEqual(Array(5).fill(null));
    // Releasing twice is harmless.
    const again = await redlock.release(lock);
    expect({ releasedOn: again.releasedOn, votes: again.votes }).toEqual({ releasedOn: 0, votes: [] });
    await expect(again.settled).resolves.toEqual({ releasedOn: 0, votes: [] });
  });

  it('tryAcquire resolves null while someone else holds the resource, and leaves their keys alone', async () => {
    const holder = await redlock.acquire('busy');
    expect(await redlock.tryAcquire('busy')).toBeNull();
    expect(await valuesOnNodes(nodes, 'redlock:{busy}')).toEqual(Array(5).fill(holder.value));
    await holder.release();
    const next = await redlock.tryAcquire('busy');
    expect(next).not.toBeNull();
    await next!.release();
  });

  it('extend() renews the ttl on every node and the validity', async () => {
    const lock = await redlock.acquire('extend-me', { ttl: 1_000 });
    const before = lock.remainingTime;
    await lock.extend(5_000);
    expect(lock.remainingTime).toBeGreaterThan(before + 3_000);
    for (const ttl of await ttlsOnNodes('redlock:{extend-me}')) expect(ttl).toBeGreaterThan(4_000);
    await lock.release();
  });

  it('extend() of an expired lock, or of one another owner took over, throws LockLostError', async () => {
    const lock = await redlock.acquire('lost', { ttl: 100 });
    // Granted once the lock's keys expired on a quorum (the acquisition waits for the holder's ttl).
    const other = await redlock.acquire('lost', { ttl: 5_000, wait: 2_000 });
    expect(lock.remainingTime).toBeLessThanOrEqual(0);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);

    // Fake validity so the extension is really attempted on the nodes: they all say "not the owner".
    (lock as unknown as { setDeadline(d: number): void }).setDeadline(performance.now() + 10_000);
    const error = (await lock.extend().catch((e: unknown) => e)) as LockLostError;
    expect(error).toBeInstanceOf(LockLostError);
    // Decided as soon as 3 nodes said so; none extended.
    expect(error.votes.filter((v) => v.outcome === 'not-owner').length).toBeGreaterThanOrEqual(3);
    expect(error.votes.some((v) => v.outcome === 'extended')).toBe(false);
    expect(await valuesOnNodes(nodes, 'redlock:{lost}')).toEqual(Array(5).fill(other.value));
    await other.release();
  });

  it("a release by a previous holder whose lock expired never deletes the new holder's keys", async () => {
    const stale = await redlock.acquire('handover', { ttl: 100 });
    // Granted once the stale lock's keys expired on a quorum (the acquisition waits for the holder's ttl).
    const fresh = await redlock.acquire('handover', { ttl: 5_000, wait: 2_000 });
    expect(stale.remainingTime).toBeLessThanOrEqual(0);
    const result = await stale.release();
    expect(result.releasedOn).toBe(0);
    expect(result.votes.every((v) => v.outcome === 'not-owner')).toBe(true);
    expect(await valuesOnNodes(nodes, 'redlock:{handover}')).toEqual(Array(5).fill(fresh.value));
    await fresh.release();
  });

  it('a lock cannot be released or extended through another Redlock instance', async () => {
    const other = await redlockOn(nodes, { keyPrefix: 'other:' });
    const lock = await redlock.acquire('mine');
    await expect(other.release(lock)).rejects.toThrow(/acquired through another Redlock instance/);
    await expect(other.extend(lock)).rejects.toThrow(/acquired through another Redlock instance/);
    expect(await valuesOnNodes(nodes, 'redlock:{mine}')).toEqual(Array(5).fill(lock.value));
    await lock.release();
  });

  it('keeps locking while the script cache is flushed mid-run (NOSCRIPT falls back to EVAL)', async () => {
    const admins = nodes.nodes.map((node) => node.redis());
    try {
      for (let i = 0; i < 60; i++) {
        if (i % 5 === 0) await Promise.all(admins.map((admin) => admin.script('FLUSH')));
        const lock = await redlock.acquire(`flush:${i % 3}`, { wait: 0 });
        if (i % 7 === 0) await lock.extend();
        // Every node ran the scripts (a failed fallback would be an error vote; a slow node only a timeout).
        const released = await lock.release();
        expect(released.votes.filter((v) => v.outcome === 'error')).toEqual([]);
        expect(released.releasedOn).toBeGreaterThanOrEqual(3);
      }
    } finally {
      for (const admin of admins) admin.disconnect();
    }
  });

  it('concurrent calls written together survive a flushed script cache too', async () => {
    const admins = nodes.nodes.map((node) => node.redis());
    try {
      for (let round = 0; round < 3; round++) {
        await Promise.all(admins.map((admin) => admin.script('FLUSH')));
        const locks = await Promise.all(Array.from({ length: 50 }, (_, i) => redlock.acquire(`batch:${i}`)));
        const results = await Promise.all(locks.map((lock) => lock.release()));
        expect(results.every((r) => r.votes.every((v) => v.outcome !== 'error'))).toBe(true);
      }
    } finally {
      for (const admin of admins) admin.disconnect();
    }
  });

  it('an acquire re-sent after NOSCRIPT, answering after the lock was released, is still undone', async () => {
    const admins = nodes.nodes.map((node) => node.redis());
    const keyEnds = await watchKeyEnds(nodes);
    try {
      for (let i = 0; i < 20; i++) {
        const key = `redlock:{resent:${i}}`;
        const ends = keyEnds.of(key); // listening before the key is written
        // Two nodes lost their script cache: their acquires need a second round trip (EVAL after NOSCRIPT),
        // so the three others decide the quorum and the release is sent before those acquires run.
        await Promise.all(admins.slice(3).map((admin) => admin.script('FLUSH')));
        const lock = await redlock.acquire(`resent:${i}`, { wait: 0, ttl: 3_000 });
        await lock.release();
        // On every node the key was written and then deleted (by the release, or by the undo of a late
        // acquire), not left to expire: the keyspace notifications say how each node's copy ended.
        expect({ i, ends: await Promise.all(ends) }).toEqual({ i, ends: Array(5).fill('del') });
        const values = await Promise.all(admins.map((admin) => admin.exists(key)));
        expect({ i, gone: values.every((exists) => exists === 0) }).toEqual({ i, gone: true });
      }
    } finally {
      await keyEnds.stop();
      for (const admin of admins) admin.disconnect();
    }
  });

  it('a new connection sends each script in full once, then by digest: no NOSCRIPT round trip', async () => {
    const admins = nodes.nodes.map((node) => node.redis());
    try {
      await Promise.all(admins.map((admin) => admin.script('FLUSH')));
      await Promise.all(admins.map((admin) => admin.config('RESETSTAT')));
      const fresh = await redlockOn(nodes);
      for (let i = 0; i < 3; i++) await (await (await fresh.acquire('in-full')).release()).settled;
      for (const info of await Promise.all(admins.map((admin) => admin.info('commandstats')))) {
        // The acquire and the release scripts once each in full; the two later cycles by digest, none refused.
        expect(info).toMatch(/cmdstat_eval:calls=2,.*failed_calls=0\b/);
        expect(info).toMatch(/cmdstat_evalsha:calls=4,.*failed_calls=0\b/);
      }
    } finally {
      for (const admin of admins) admin.disconnect();
    }
  });

  it('every release goes by digest and is re-sent in full after NOSCRIPT, the lock gone everywhere', async () => {
    const admins = nodes.nodes.map((node) => node.redis());
    const stats = () => Promise.all(admins.map((admin) => admin.info('commandstats')));
    try {
      // Every release is of an owner value never written again (each attempt has its own, DESIGN §7), so a
      // re-send after NOSCRIPT that runs after later commands still deletes nothing but its own keys.
      // A connection's first call of each script goes in full: the release under test is a later one.
      await (
        await (await redlock.acquire('by-digest:first')).release()
      ).settled;
      const lock = await redlock.acquire('by-digest');
      await Promise.all(admins.map((admin) => admin.script('FLUSH')));
      await Promise.all(admins.map((admin) => admin.config('RESETSTAT')));
      expect((await (await lock.release()).settled).releasedOn).toBe(5);
      for (const info of await stats()) {
        expect(info).toMatch(/cmdstat_evalsha:calls=1,.*failed_calls=1\b/); // NOSCRIPT
        expect(info).toMatch(/cmdstat_eval:calls=1,/);
      }
      expect(await valuesOnNodes(nodes, 'redlock:{by-digest}')).toEqual(Array(5).fill(null));
    } finally {
      for (const admin of admins) admin.disconnect();
    }
  });

  it("retrying never blocks on the caller's own keys: a key with the same owner value counts as free", async () => {
    const node = redlock.nodes[0] as IoredisLockNode;
    const admin = nodes.nodes[0].redis();
    try {
      await admin.set('redlock:{own}', 'owner-x', 'PX', 60_000);
      const request = {
        keys: ['redlock:{own}'],
        fenceKeys: [],
        ttl: 5_000,
        guardWindow: 0,
        guardKey: 'redlock:!boot',
      };
      await expect(node.acquire({ ...request, owner: 'owner-x' })).resolves.toEqual({
        outcome: 'acquired',
        token: 0,
        time: expect.any(Number),
      });
      expect(await admin.pttl('redlock:{own}')).toBeLessThanOrEqual(5_000);
      await expect(node.acquire({ ...request, owner: 'owner-y' })).resolves.toMatchObject({
        outcome: 'busy',
      });
    } finally {
      admin.disconnect();
    }
  });

  it('a plain lock on a free resource reads it with one EXISTS of its lock and readers keys, not a GET', async () => {
    const other = await redlockOn(nodes, { owner: 'other' });
    const commands = await NodeCommands.open([nodes.nodes[0]]);
    const [free, held] = ['redlock:{fast:free}', 'redlock:{fast:held}'];
    const existsOf =
      (key: string) =>
      ([name, ...keys]: readonly string[]) =>
        name === 'exists' && keys.join(' ') === `${key} ${key}:readers`;
    const getOf = (key: string) => (c: readonly string[]) => c[0] === 'get' && c[1] === key;
    const setOf = (key: string) => (c: readonly string[]) => c[0] === 'set' && c[1] === key;
    try {
      await (await redlock.acquire('fast:free')).release();
      await commands.ran(setOf(free));
      const granting = commands.commands(0).slice(0, commands.commands(0).findIndex(setOf(free)));
      expect(granting.filter(existsOf(free))).toHaveLength(1);
      expect(granting.filter(getOf(free))).toEqual([]);
      // The control: a resource held here takes the full checks, whose GET finds the holder.
      const holder = await redlock.acquire('fast:held');
      expect(await other.tryAcquire('fast:held')).toBeNull();
      await commands.ran(existsOf(held), setOf(held), existsOf(held), getOf(held));
      await holder.release();
    } finally {
      commands.close();
      await other.quit();
    }
  });

  it('multi-resource acquisition is all-or-nothing on each node', async () => {
    const holder = await redlock.acquire('b');
    expect(await redlock.tryAcquire(['a', 'b', 'c'])).toBeNull();
    expect(await valuesOnNodes(nodes, 'redlock:{a}')).toEqual(Array(5).fill(null));
    expect(await valuesOnNodes(nodes, 'redlock:{c}')).toEqual(Array(5).fill(null));
    await holder.release();
    const all = await redlock.acquire(['a', 'b', 'c']);
    for (const key of ['redlock:{a}', 'redlock:{b}', 'redlock:{c}']) {
      expect(await valuesOnNodes(nodes, key)).toEqual(Array(5).fill(all.value));
    }
    await all.release();
  });

  it('using() releases after the work, also when it throws, and passes the error through unchanged', async () => {
    const failure = new Error('the work failed');
    await expect(
      redlock.using('work', async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await valuesOnNodes(nodes, 'redlock:{work}')).toEqual(Array(5).fill(null));
    await expect(redlock.using('work', { ttl: 2_000 }, async (lock) => lock.resources)).resolves.toEqual([
      'work',
    ]);
    expect(await valuesOnNodes(nodes, 'redlock:{work}')).toEqual(Array(5).fill(null));
  });
});

describe('Redis-side failures map to errors, never crash, never leave keys (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterEach: closeAll, flushAfterEach: false });

  async function onEach(
    run: (admin: ReturnType<RedisNodes['nodes'][0]['redis']>) => Promise<unknown>,
    which = [0, 1, 2],
  ) {
    for (const i of which) {
      const admin = nodes.nodes[i].redis();
      try {
        await run(admin);
      } finally {
        admin.disconnect();
      }
    }
  }

  it('another type at the boot marker is named as the marker (ForeignDataError), not blamed on the lock key', async () => {
    const redlock = await redlockOn(nodes, { restartGuard: true, ttl: 1_000 });
    await onEach((admin) => admin.hset('redlock:!boot', 'field', 'value'));
    const error = (await redlock
      .acquire('boot', { wait: 0 })
      .catch((e: unknown) => e)) as QuorumUnavailableError;
    expect(error).toBeInstanceOf(QuorumUnavailableError);
    // Every node that answered (the decision may come before the last one: 'pending') named the marker.
    const answered = error.votes.filter((v) => v.outcome !== 'pending');
    expect(answered.length).toBeGreaterThanOrEqual(2);
    expect(answered.every((v) => v.error instanceof ForeignDataError)).toBe(true);
    expect(answered[0].error!.message).toContain('"redlock:!boot" holds a hash');
    expect(error.message).not.toMatch(/lock key/);
    await onEach((admin) => admin.flushall());
  });

  it('WRONGTYPE (the key holds user data) is reported per node with the fix', async () => {
    const redlock = await redlockOn(nodes);
    await onEach((admin) => admin.hset('redlock:{user-data}', 'field', 'value'), [0, 1]);
    const error = (await redlock
      .acquire('user-data', { wait: 0 })
      .catch((e: unknown) => e)) as QuorumUnavailableError;
    expect(error).toBeInstanceOf(QuorumUnavailableError);
    expect(error.message).toMatch(/WRONGTYPE/);
    expect(error.message).toMatch(/keyPrefix/);
    expect(error.votes.filter((v) => v.outcome === 'error')).toHaveLength(2);
    // The one node that said yes was cleaned up; the user's data is untouched.
    await onEach(async (admin) => expect(await admin.exists('redlock:{user-data}')).toBe(0), [2]);
    await onEach(
      async (admin) => expect(await admin.hget('redlock:{user-data}', 'field')).toBe('value'),
      [0, 1],
    );
    await onEach((admin) => admin.flushall());
  });

  it('READONLY replicas and OOM nodes are errors in the votes, not crashes', async () => {
    const redlock = await redlockOn(nodes);
    const master = nodes.nodes[2];
    await onEach((admin) => admin.replicaof('127.0.0.1', master.port), [0]);
    await onEach((admin) => admin.config('SET', 'maxmemory', '1'), [1]);
    try {
      const error = (await redlock
        .acquire('degraded', { wait: 0 })
        .catch((e: unknown) => e)) as QuorumUnavailableError;
      expect(error).toBeInstanceOf(QuorumUnavailableError);
      expect(error.message).toMatch(/READONLY/);
      expect(error.message).toMatch(/list primaries only/);
      expect(error.message).toMatch(/OOM/);
    } finally {
      await onEach((admin) => admin.replicaof('NO', 'ONE'), [0]);
      await onEach((admin) => admin.config('SET', 'maxmemory', '0'), [1]);
    }
    expect(await valuesOnNodes(nodes, 'redlock:{degraded}')).toEqual([null, null, null]);
    const lock = await redlock.acquire('degraded');
    await lock.release();
  });

  it('an even number of nodes logs a warning', async () => {
    const warnings: string[] = [];
    const redlock = new Redlock(nodes.urls.slice(0, 2), { logger: { warn: (m) => warnings.push(m) } });
    await redlock.quit();
    expect(warnings).toEqual([expect.stringMatching(/even count/)]);
  });
});

describe('the same server under another name (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { flushAfterEach: false });

  it('0.0.0.0 next to 127.0.0.1 (same port) is recognised by its run_id and named in a loud warning', async () => {
    const warnings: string[] = [];
    const port = new URL(nodes.urls[0]).port;
    const redlock = new Redlock([nodes.urls[0], `redis://0.0.0.0:${port}`, nodes.urls[1]], {
      logger: { warn: (message) => warnings.push(message) },
      restartGuard: false,
    });
    await redlock.connect(2_000);
    await redlock.quit();
    expect(warnings).toEqual([
      expect.stringMatching(
        /^nodes\[0\] \(127\.0\.0\.1:\d+\) and nodes\[1\] \(0\.0\.0\.0:\d+\) are the same Redis server/,
      ),
    ]);
  });

  it('negative control: three distinct servers give no warning', async () => {
    const warnings: string[] = [];
    const redlock = new Redlock(nodes.urls, {
      logger: { warn: (m) => warnings.push(m) },
      restartGuard: false,
    });
    await redlock.connect(2_000);
    await redlock.quit();
    expect(warnings).toEqual([]);
  });
});
