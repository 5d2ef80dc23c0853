import { Cluster } from 'ioredis';
import {
  AcquireReply,
  AcquireRequest,
  InvalidArgumentError,
  Lock,
  LockNode,
  QuorumUnavailableError,
  Redlock,
} from '../../lib';
import { type Clock, systemClock } from '../../lib/core/clock';
import { slotOf } from '../../lib/redis/script-node/cluster-slots';
import { NodeCommands, acquireOn, renewedTimes, subscribeTo } from '../support';
import { LocalCluster, startCluster } from '../support/redis-cluster';

/**
 * A real local Redis Cluster (3 primaries, 3 replicas) as one Redlock node (quorum 1): locks, fencing, the
 * restart guard per slot, release announcements, multi-slot refusal, and locking through a slot migration and
 * a replica failover.
 */
describe('Redis Cluster as a node (3 primaries + 3 replicas, real processes)', () => {
  let cluster: LocalCluster;
  let client: Cluster;
  jest.setTimeout(60_000);

  beforeAll(async () => {
    cluster = await startCluster(3);
  });
  beforeEach(async () => {
    client = new Cluster(cluster.startup, { redisOptions: { maxRetriesPerRequest: 1 } });
    await new Promise((resolve) => client.once('ready', resolve));
  });
  afterEach(() => {
    client.disconnect();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('computes slots as the cluster does', async () => {
    for (const key of [
      'redlock:{a}',
      'redlock:{a}:fence',
      'redlock:!boot{60b}',
      'foo',
      '{user1000}.following',
    ]) {
      expect(slotOf(key)).toBe(await client.cluster('KEYSLOT', key));
    }
  });

  it('locks, fences, extends and releases; named by its startup nodes', async () => {
    const redlock = new Redlock([client], { restartGuard: false, logger: false });
    try {
      expect(redlock.nodes[0].name).toBe(`cluster ${cluster.addresses.join(',')}`);
      const first = await redlock.acquire('cluster:1', { fencing: true });
      await redlock.extend(first);
      expect((await redlock.release(first)).releasedOn).toBe(1);
      const second = await redlock.acquire('cluster:1', { fencing: true });
      expect(second.fencingToken!).toBeGreaterThan(first.fencingToken!);
      expect(await redlock.tryAcquire('cluster:1')).toBeNull();
      await redlock.release(second);
    } finally {
      await redlock.quit();
    }
  });

  it('the restart guard works per slot: markers in the lock slot (no CROSSSLOT); a primary restarted empty refuses', async () => {
    const redlock = new Redlock([client], {
      ttl: 2_000,
      // Longer than a restart plus the cluster settling takes on a loaded machine, so the refusal is seen.
      restartGuard: 6_000,
      logger: false,
      nodeTimeout: 500,
    });
    try {
      // Markers written in the lock slot (no CROSSSLOT), by a guard of a short window: the fresh cluster is
      // past it at once, where the 6 s window would first wait out the nodes' first seconds.
      const warm = new Redlock([client], {
        ttl: 1_000,
        restartGuard: 1_000,
        logger: false,
        nodeTimeout: 500,
      });
      try {
        await warm.release(await warm.acquire('cluster:guarded', { wait: 10_000 }));
      } finally {
        await warm.quit();
      }
      const slot = slotOf('redlock:{cluster:guarded}');
      const primary = await cluster.primaryOf(slot);
      // Restarted within the cluster's node timeout: it comes back as the slot's primary, with no data.
      const handle = cluster.nodes.nodes.find((node) => node.url.endsWith(primary))!;
      await handle.restartEmpty();
      await cluster.waitUntilOk();
      expect(await cluster.primaryOf(slot)).toBe(primary);
      // A wait that the refusal's remaining window (about 5 s) exceeds: refused at once, while a connection
      // fault of the restart's aftermath (the client reconnecting) would be retried by the acquisition itself.
      const refused = await redlock.acquire('cluster:guarded', { wait: 1_000 }).catch((e: unknown) => e);
      if (refused instanceof Lock) await redlock.release(refused);
      expect(refused).toBeInstanceOf(QuorumUnavailableError);
      expect((refused as QuorumUnavailableError).votes[0]).toMatchObject({ outcome: 'refused' });
      // Negative control: the guard off grants at once on the same restarted primary.
      const unguarded = new Redlock([client], { restartGuard: false, logger: false });
      await unguarded.release(await unguarded.acquire('cluster:guarded'));
      await unguarded.quit();
    } finally {
      await redlock.quit();
    }
  });

  it('read-write locks and permits keep every key of a resource in its slot (no CROSSSLOT)', async () => {
    // A node timeout for a loaded machine (the default 50 ms once failed an extend here under load).
    const redlock = new Redlock([client], { restartGuard: false, logger: false, nodeTimeout: 1_000 });
    try {
      const readers = await Promise.all([
        redlock.acquire('cluster:rw', { mode: 'read', fencing: true }),
        redlock.acquire('cluster:rw', { mode: 'read' }),
      ]);
      expect(await redlock.tryAcquire('cluster:rw')).toBeNull(); // a writer waits for the readers
      await readers[0].extend(5_000);
      await Promise.all(readers.map((reader) => reader.release()));
      const writer = await redlock.acquire('cluster:rw', { fencing: true });
      expect(writer.fencingToken!).toBeGreaterThan(readers[0].fencingToken!);
      await writer.release();
      const permits = await Promise.all([0, 1].map(() => redlock.acquire('cluster:pool', { permits: 2 })));
      expect(permits.map((lock) => lock.permit).sort()).toEqual([0, 1]);
      expect(await redlock.tryAcquire('cluster:pool', { permits: 2 })).toBeNull();
      // Each script above declared the readers, intent, fence, permit and limit keys: on a cluster a key in
      // another slot would have failed the call with CROSSSLOT.
      await Promise.all(permits.map((lock) => lock.release()));
    } finally {
      await redlock.quit();
    }
  });

  it('batched renewal: locks spread over every primary are renewed in calls of one slot each, none lost', async () => {
    // A loaded machine can hold per-slot calls past the default 50 ms: the claim here is about slots.
    const redlock = new Redlock([client], { restartGuard: false, logger: false, nodeTimeout: 500 });
    let renewed = 0;
    const errors: string[] = [];
    redlock.on('extended', () => renewed++);
    redlock.on('node-error', ({ error }) => errors.push(error.message));
    const locks: Lock[] = [];
    try {
      for (let i = 0; i < 60; i++) {
        const read = i % 3 === 0;
        locks.push(
          await redlock.acquire(`cluster:renew:${i}`, {
            ttl: 600,
            ...(read ? { mode: 'read' as const } : {}),
          }),
        );
      }
      const slots = new Set(locks.map((lock) => slotOf(lock.keys[0])));
      expect(slots.size).toBeGreaterThan(30); // spread over the slot space, so over all three primaries
      const stops = locks.map((lock) => redlock.keepAlive(lock));
      await renewedTimes(redlock, locks, 2); // two rounds: every lock renewed twice
      stops.forEach((stop) => stop());
      // Two rounds or more of 60 renewals; a call mixing slots would have failed with CROSSSLOT.
      expect(renewed).toBeGreaterThanOrEqual(60 * 2);
      expect(errors).toEqual([]);
      expect(locks.filter((lock) => lock.signal.aborted).map((lock) => lock.resources[0])).toEqual([]);
    } finally {
      await Promise.all(locks.map((lock) => redlock.release(lock)));
      await redlock.quit();
    }
  });

  it('inspect, holders (a scan of every primary) and revoke on a Cluster node', async () => {
    const redlock = new Redlock([client], { restartGuard: false, logger: false, owner: 'cluster-op' });
    const holder = new Redlock([client], { restartGuard: false, logger: false, owner: 'cluster-holder' });
    try {
      await Promise.all([redlock.connect(5_000), holder.connect(5_000)]);
      // Resources spread over the slots of several primaries: holders() must scan each of them.
      const resources = Array.from({ length: 12 }, (_, i) => `ops:${i}`);
      const primaries = new Set(
        await Promise.all(resources.map((r) => cluster.primaryOf(slotOf(`redlock:{${r}}`)))),
      );
      expect(primaries.size).toBeGreaterThan(1);
      const locks = await Promise.all(resources.map((r) => holder.acquire(r, { ttl: 30_000 })));
      const permit = await holder.acquire('ops:pool', { permits: 2 });
      const inspection = await redlock.inspect('ops:pool');
      expect(inspection).toMatchObject({ state: 'held', permits: 2 });
      expect(inspection.holders.map((h) => [h.owner, h.permit])).toEqual([['cluster-holder', permit.permit]]);
      const listed = await redlock.holders({ prefix: 'ops:' });
      expect(listed.map((i) => i.resource).sort()).toEqual([...resources, 'ops:pool'].sort());
      const aborted = new Promise((resolve) =>
        locks[3].signal.addEventListener('abort', resolve, { once: true }),
      );
      expect((await redlock.revoke('ops:3', { reason: 'cluster test' })).revokedOn).toBe(1);
      await aborted;
      expect(locks[3].lostError?.name).toBe('LockRevokedError');
      expect((await redlock.inspect('ops:3')).state).toBe('free');
      await Promise.all([...locks.filter((_, i) => i !== 3), permit].map((lock) => lock.release()));
      expect(await redlock.holders({ prefix: 'ops:' })).toEqual([]);
    } finally {
      await Promise.all([redlock.quit(), holder.quit()]);
    }
  });

  it('a cluster member given as a plain address: the failing calls say so and how to pass the cluster', async () => {
    const member = cluster.addresses[0];
    const redlock = new Redlock([`redis://${member}`], { restartGuard: false, logger: false });
    try {
      await redlock.connect(5_000);
      // Resources until one hashes to a slot another member serves: that member answers MOVED.
      let explained: string | undefined;
      for (let i = 0; i < 50 && explained === undefined; i++) {
        const primary = await cluster.primaryOf(slotOf(`redlock:{member:${i}}`));
        if (primary === member) continue;
        const error = (await redlock
          .acquire(`member:${i}`, { wait: 0 })
          .catch((e: unknown) => e)) as QuorumUnavailableError;
        expect(error).toBeInstanceOf(QuorumUnavailableError);
        explained = error.votes[0].error?.message;
      }
      expect(explained).toMatch(/^MOVED \d+ .* is a member of a Redis Cluster, given as a single address/);
      expect(explained).toContain('new Cluster([{ host:');
    } finally {
      await redlock.quit();
    }
  });

  /** Pub/sub messages the nodes sent each other over the cluster bus: PUBLISH (to every node) and SPUBLISH. */
  async function busPublishes(): Promise<{ broadcast: number; sharded: number }> {
    let broadcast = 0;
    let sharded = 0;
    for (const node of cluster.nodes.nodes) {
      const admin = node.redis();
      try {
        const info = String(await admin.cluster('INFO'));
        broadcast += Number(/cluster_stats_messages_publish_sent:(\d+)/.exec(info)?.[1] ?? 0);
        sharded += Number(/cluster_stats_messages_publishshard_sent:(\d+)/.exec(info)?.[1] ?? 0);
      } finally {
        admin.disconnect();
      }
    }
    return { broadcast, sharded };
  }

  /** Resolves once some node of the cluster ran a SUBSCRIBE or SSUBSCRIBE of `channel` (monitors opened first). */
  async function subscribedSomewhere(channel: string): Promise<{ done: Promise<void>; close(): void }> {
    const monitors = await Promise.all(cluster.nodes.nodes.map((node) => NodeCommands.open([node])));
    return {
      done: Promise.any(monitors.map((monitor) => monitor.ran(subscribeTo(channel)))),
      close: () => monitors.forEach((monitor) => monitor.close()),
    };
  }

  /**
   * The system clock, telling when a timer of a second or more is next armed: a waiter that went to sleep until
   * the holder's ttl (or its budget) ends.
   */
  function watchedClock(): { clock: Clock; nextLongTimer(): Promise<void> } {
    let armed: (() => void) | undefined;
    const clock: Clock = {
      now: () => systemClock.now(),
      setTimeout(fn, ms, keepsAlive) {
        if (ms >= 1_000) armed?.();
        return systemClock.setTimeout(fn, ms, keepsAlive);
      },
    };
    return { clock, nextLongTimer: () => new Promise<void>((resolve) => (armed = resolve)) };
  }

  /**
   * A holder, a waiter for the same resource, the holder's release once the waiter is asleep (`watched`: the
   * instance's clock): the waiter must wake on its announcement.
   */
  async function handOver(
    redlock: Redlock,
    resource: string,
    watched: ReturnType<typeof watchedClock>,
  ): Promise<void> {
    const key = `redlock:{${resource}}`;
    const held = await redlock.acquire(resource, { ttl: 30_000 });
    // Armed after the holder's own timers: the next long one is the waiter's sleep.
    const asleep = watched.nextLongTimer();
    const primary = await cluster.primaryOf(slotOf(key));
    const commands = await NodeCommands.open(
      cluster.nodes.nodes.filter((node) => node.url.endsWith(primary)),
    );
    const subscribed = await subscribedSomewhere(`${key}:released`);
    const waiting = redlock.acquire(resource, { wait: 10_000 });
    // Asleep until the release: its subscription ran (somewhere in the cluster: a SUBSCRIBE goes to any node,
    // an SSUBSCRIBE to the slot's primary), and its first attempt, then the one right after it subscribed, ran
    // on the slot's primary. Acquire scripts only: the release that undoes the first attempt names the key too.
    await subscribed.done;
    await commands.ran(acquireOn(key), acquireOn(key));
    subscribed.close();
    commands.close();
    // Its second busy answer handled and its sleep begun: a release announced earlier would set it to retry
    // after a short quiet period instead (woken by a timer, not by the announcement).
    await asleep;
    await redlock.release(held);
    await redlock.release(await waiting);
    expect(redlock.stats.wokenByRelease).toBeGreaterThanOrEqual(1);
  }

  it('a waiter wakes on the release announcement, which stays in its shard (SPUBLISH)', async () => {
    const watched = watchedClock();
    const redlock = new Redlock([client], { restartGuard: false, logger: false }, { clock: watched.clock });
    try {
      const before = await busPublishes();
      await handOver(redlock, 'cluster:wake', watched);
      const after = await busPublishes();
      // Two releases: each went to its primary's replica only, none to the other four nodes.
      expect(after.broadcast - before.broadcast).toBe(0);
      expect(after.sharded - before.sharded).toBeGreaterThanOrEqual(2);
      // The counter's control: one PUBLISH crosses the bus to the five other nodes.
      await client.publish('cluster:control', 'x');
      expect((await busPublishes()).broadcast - after.broadcast).toBe(5);
    } finally {
      await redlock.quit();
    }
  });

  it('a user denied sharded pub/sub still wakes waiters: subscribers and scripts fall back to SUBSCRIBE/PUBLISH', async () => {
    for (const node of cluster.nodes.nodes) {
      const admin = node.redis();
      try {
        await admin.call('ACL', 'SETUSER', 'noshard', 'on', '>noshard-pw', '~*', '&*', '+@all', '-spublish');
        await admin.call('ACL', 'SETUSER', 'noshard', '-ssubscribe', '-sunsubscribe');
      } finally {
        admin.disconnect();
      }
    }
    const limited = new Cluster(cluster.startup, {
      redisOptions: { username: 'noshard', password: 'noshard-pw', maxRetriesPerRequest: 1 },
    });
    await new Promise((resolve) => limited.once('ready', resolve));
    const watched = watchedClock();
    const redlock = new Redlock([limited], { restartGuard: false, logger: false }, { clock: watched.clock });
    try {
      // The first subscription of this client opens its subscriber connections and learns that SSUBSCRIBE is
      // denied (then falls back to SUBSCRIBE): done here, before the waiter measured below, whose subscription
      // is then one SUBSCRIBE on a connection already up (the library allows it 250 ms, once per acquisition).
      const warmUp = 'redlock:{cluster:noshard:warm-up}';
      const warmed = await subscribedSomewhere(`${warmUp}:released`);
      const unwatch = await warmUpWatch(redlock, warmUp);
      await warmed.done;
      warmed.close();
      unwatch();
      const before = await busPublishes();
      await handOver(redlock, 'cluster:noshard', watched);
      // The announcements crossed the bus as PUBLISH (to the five other nodes each).
      expect((await busPublishes()).broadcast - before.broadcast).toBeGreaterThanOrEqual(5);
    } finally {
      await redlock.quit();
      limited.disconnect();
    }
  });

  /**
   * A release watch on `key` through the node's own channels, asked again (at once) while it fails: a first
   * SSUBSCRIBE may miss its confirmation time while the subscriber connects, and only a refusal that comes
   * in time switches the node to SUBSCRIBE.
   */
  async function warmUpWatch(redlock: Redlock, key: string): Promise<() => void> {
    let lastError: unknown;
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        return await redlock.nodes[0].watch!([key], () => undefined);
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  }

  // docs/DESIGN.md §7. A Cluster client does not keep send order (MOVED/ASK and TRYAGAIN retries run a command
  // after later ones): here the release of a waiter's failed attempt runs on the real cluster only after its
  // next attempt's acquire answered, as such a retry would.
  async function retryWithLateRelease(internals: { unsafeReuseOwner?: boolean }) {
    const resource = `cluster:reorder:${internals.unsafeReuseOwner ? 'control' : 'fixed'}`;
    const key = `redlock:{${resource}}`;
    const holder = new Redlock([client], { restartGuard: false, logger: false });
    const inner = holder.nodes[0];
    const late = new LateReleaseNode(inner);
    const waiter = new Redlock([late], { restartGuard: false, logger: false, retryDelay: 10 }, internals);
    try {
      const held = await holder.acquire(resource, { ttl: 10_000 });
      const waiting = waiter.acquire(resource, { wait: 10_000 });
      await late.heldBack; // the waiter's first attempt failed; its release is held back
      await holder.release(held);
      const lock = await waiting;
      await late.ran; // the held-back release ran after the winning acquire
      const value = await client.get(key);
      const intruder = await holder.tryAcquire(resource);
      if (intruder) await holder.release(intruder);
      await waiter.release(lock);
      return { late: late.order, held: value === lock.value, intruderGranted: intruder !== null };
    } finally {
      await Promise.all([waiter.quit(), holder.quit()]);
    }
  }

  it("a failed attempt's release that runs after the next attempt's acquire deletes nothing of it", async () => {
    const result = await retryWithLateRelease({});
    expect(result).toEqual({ late: ['acquire', 'acquire', 'release'], held: true, intruderGranted: false });
  });

  it('negative control: with one owner value across attempts, that late release frees a held lock', async () => {
    const result = await retryWithLateRelease({ unsafeReuseOwner: true });
    expect(result).toEqual({ late: ['acquire', 'acquire', 'release'], held: false, intruderGranted: true });
  });

  it('a multi-resource lock whose keys hash to different slots is refused before any traffic, naming hash tags', async () => {
    const redlock = new Redlock([client], { restartGuard: false, logger: false });
    try {
      expect(slotOf('redlock:{a}')).not.toBe(slotOf('redlock:{b}'));
      const error = await redlock.acquire(['a', 'b']).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as Error).message).toMatch(/Redis Cluster.*hash to 2 slots.*hash tag/);
    } finally {
      await redlock.quit();
    }
  });

  async function lockThrough(change: () => Promise<{ from: string; to: string }>, resource: string) {
    const redlock = new Redlock([client], { restartGuard: false, logger: false, nodeTimeout: 2_000 });
    const slot = slotOf(`redlock:{${resource}}`);
    let stop = false;
    let cycles = 0;
    const failures: string[] = [];
    let goal: { cycles: number; reached: () => void } | undefined;
    /** Resolves once `count` lock cycles (acquire, release) completed in all. */
    const cyclesDone = (count: number) =>
      new Promise<void>((reached) => {
        if (cycles >= count) reached();
        else goal = { cycles: count, reached };
      });
    const loop = (async () => {
      while (!stop) {
        try {
          const lock: Lock = await redlock.acquire(resource, { wait: 5_000 });
          await redlock.release(lock);
          cycles++;
          if (goal && cycles >= goal.cycles) goal.reached();
        } catch (error) {
          failures.push((error as Error).message);
        }
      }
    })();
    await cyclesDone(5); // locking goes on before the change
    const before = cycles;
    const moved = await change();
    await cyclesDone(cycles + 5); // and after it: cycles begun once the slot was served elsewhere
    stop = true;
    await loop;
    // After the change the slot is served elsewhere, and locking went on there.
    expect(await cluster.primaryOf(slot)).toBe(moved.to);
    const last = await redlock.acquire(resource, { wait: 5_000 });
    await redlock.release(last);
    await redlock.quit();
    return { before, cycles, failures };
  }

  it('keeps locking while the lock slot migrates to another primary', async () => {
    const { before, cycles, failures } = await lockThrough(
      () => cluster.migrate(slotOf('redlock:{cluster:migrating}')),
      'cluster:migrating',
    );
    expect(before).toBeGreaterThan(0);
    expect(cycles).toBeGreaterThan(before);
    expect(failures).toEqual([]);
  });

  it('keeps locking through a replica failover of the lock slot', async () => {
    const { before, cycles } = await lockThrough(
      () => cluster.failover(slotOf('redlock:{cluster:failover}')),
      'cluster:failover',
    );
    expect(before).toBeGreaterThan(0);
    expect(cycles).toBeGreaterThan(before);
  });
});

/**
 * A node over a real one that holds back the first release until the next acquire has answered, then runs it:
 * the order a Cluster client's redirect or retry can give them. Records what ran on the server, in order.
 */
class LateReleaseNode implements LockNode {
  readonly name: string;
  readonly ordered = false;
  readonly order: string[] = [];
  readonly heldBack: Promise<void>;
  readonly ran: Promise<void>;
  private held: (() => Promise<number>) | undefined;
  private done = false;
  private markHeld!: () => void;
  private markRan!: () => void;

  constructor(private readonly inner: LockNode) {
    this.name = `late ${inner.name}`;
    this.heldBack = new Promise((resolve) => (this.markHeld = resolve));
    this.ran = new Promise((resolve) => (this.markRan = resolve));
  }

  async acquire(request: AcquireRequest): Promise<AcquireReply> {
    const reply = await this.inner.acquire(request);
    this.order.push('acquire');
    const held = this.held;
    if (held) {
      this.held = undefined;
      await held();
      this.order.push('release');
      this.markRan();
    }
    return reply;
  }
  fence(keys: readonly string[], fenceKeys: readonly string[], owner: string, token: number) {
    return this.inner.fence(keys, fenceKeys, owner, token);
  }
  extend(keys: readonly string[], owner: string, ttl: number) {
    return this.inner.extend(keys, owner, ttl);
  }
  release(keys: readonly string[], owner: string): Promise<number> {
    if (this.done) return this.inner.release(keys, owner);
    this.done = true;
    return new Promise((resolve, reject) => {
      this.held = () =>
        this.inner.release(keys, owner).then(
          (n) => (resolve(n), n),
          (e) => (reject(e), 0),
        );
      this.markHeld();
    });
  }
}
