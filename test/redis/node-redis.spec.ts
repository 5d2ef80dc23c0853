import { Injectable } from '@nestjs/common';
import { createClient, createCluster } from 'redis';
import { InvalidArgumentError, Lock, Locked, Redlock, RedlockModule } from '../../lib';
import { optionalPeer } from '../../lib/redis/script-node/client-packages';
import { TEST_OPTIONS, closeApps, createApp } from '../nest/helpers';
import { NodeCommands, acquireOn, clientCounts, renewedPast, subscribeTo, useRedisNodes } from '../support';
import { LocalCluster, startCluster } from '../support/redis-cluster';
import { slotOf } from '../../lib/redis/script-node/cluster-slots';

const LEAST_PRIVILEGE =
  'on >lockpass ~redlock:* &redlock:* -@all +evalsha +eval +get +set +pttl +pexpire +del +exists +zadd +zrange ' +
  '+zremrangebyscore +zscore +zrem +publish +time +type +zcard +scan +ping +subscribe +unsubscribe +quit';

/** What only node-redis clients need beyond the parametrised suite (test/redis/clients.spec.ts). */
describe('node-redis clients (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterEach: closeApps });
  const clients: ReturnType<typeof createClient>[] = [];
  const connected = async (url: string) => {
    const client = createClient({ url });
    client.on('error', () => undefined);
    await client.connect();
    clients.push(client);
    return client;
  };
  afterEach(() => clients.splice(0).forEach((client) => void client.destroy()));

  it('as a least-privilege ACL user (INFO denied): the restart guard runs in its portable mode', async () => {
    for (const node of nodes.nodes) {
      const admin = node.redis();
      await admin.call('ACL', 'SETUSER', 'locker', 'reset', ...LEAST_PRIVILEGE.split(' '));
      admin.disconnect();
    }
    const urls = nodes.urls.map((url) => url.replace('redis://', 'redis://locker:lockpass@'));
    const redlock = new Redlock(await Promise.all(urls.map(connected)), {
      logger: false,
      ttl: 1_000,
      restartGuard: 1_000,
    });
    try {
      const states = await redlock.connect(2_000);
      expect(states.map((state) => [state.ready, state.guardMode])).toEqual(
        urls.map(() => [true, 'data-age']),
      );
      // The portable guard's window over fresh data: the acquisition waits it out (the refusal's retryAfter).
      const lock = await redlock.acquire('acl:nr', { fencing: true, wait: 5_000 });
      expect(lock.fencingToken).toBeGreaterThan(0);
      await lock.release();
    } finally {
      await redlock.quit();
    }
  });

  it('@Locked in a Nest app whose nodes are node-redis clients', async () => {
    const running: string[] = [];
    let overlaps = 0;
    const specs = await Promise.all(nodes.urls.map(connected));
    @Injectable()
    class Payments {
      @Locked('pay:<0>', { wait: 10_000 })
      async pay(id: string) {
        if (running.includes(id)) overlaps++;
        running.push(id);
        // Work on the nodes while holding it: round trips during which the other callers' attempts run.
        await Promise.all(specs.map((client) => client.ping()));
        await Promise.all(specs.map((client) => client.ping()));
        running.splice(running.indexOf(id), 1);
      }
    }
    const apps = await Promise.all(
      [0, 1].map(() =>
        createApp({
          imports: [RedlockModule.forRoot(specs, { ...TEST_OPTIONS, wait: 10_000 })],
          providers: [Payments],
        }),
      ),
    );
    await Promise.all(apps.flatMap((app) => [0, 1, 2, 3].map(() => app.get(Payments).pay('order-1'))));
    expect(overlaps).toBe(0);
    await closeApps();
    // The module never closes clients it did not create.
    expect(await Promise.all(specs.map((client) => client.ping()))).toEqual(['PONG', 'PONG', 'PONG']);
  });

  it('an object that is no client the library knows is refused, saying what a node may be', () => {
    class GlideClient {
      customCommand() {
        return Promise.resolve();
      }
    }
    let caught: unknown;
    try {
      new Redlock([new GlideClient() as never, nodes.urls[1], nodes.urls[2]], { logger: false });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidArgumentError);
    expect(String(caught)).toMatch(/nodes\[0\] is a GlideClient/);
    expect(String(caught)).toMatch(/node-redis client or cluster/);
  });

  it('a client that is not connected yet is connected by connect(); commands are never queued for a replay', async () => {
    const client = createClient({ url: nodes.urls[0] });
    client.on('error', () => undefined);
    clients.push(client);
    const others = await Promise.all(nodes.urls.slice(1).map(connected));
    const redlock = new Redlock([client, ...others], { logger: false, restartGuard: false });
    try {
      await redlock.connect(2_000);
      expect(client.isReady).toBe(true);
      const dropped = new Promise((resolve) => client.once('error', resolve));
      await nodes.nodes[0].kill();
      await dropped; // the client saw the connection go
      expect(client.isReady).toBe(false);
      // While the client reconnects, calls to that node fail at once instead of waiting in its offline queue.
      const failed: string[] = [];
      redlock.on('node-error', ({ node, error }) => failed.push(`${node} ${error.name}`));
      const lock = await redlock.acquire('nr:down', { ttl: 5_000 });
      expect(failed.join()).toMatch(new RegExp(`:${nodes.nodes[0].port} NodeRedisNotConnectedError`));
      await lock.release();
      const back = new Promise((resolve) => client.once('ready', resolve));
      await nodes.nodes[0].start();
      await back;
      // Anything the client had queued would have gone out on reconnecting, before this PING.
      expect(await client.ping()).toBe('PONG');
      const admin = nodes.nodes[0].redis();
      expect(await admin.get('redlock:{nr:down}')).toBeNull(); // nothing replayed onto the restarted server
      admin.disconnect();
    } finally {
      await redlock.quit();
    }
  });
});

describe("client: 'node-redis' — the library creates node-redis clients for URLs and options (3 real nodes)", () => {
  const nodes = useRedisNodes(3);

  it('locks over URLs and createClient() options, and quit() closes the clients it created', async () => {
    const before = await clientCounts(nodes);
    const specs = [
      nodes.urls[0],
      { url: nodes.urls[1] },
      { url: nodes.urls[2], socket: { connectTimeout: 1_000 } },
    ];
    const redlock = new Redlock(specs, { client: 'node-redis', logger: false, restartGuard: false });
    const states = await redlock.connect(2_000);
    expect(states.map((state) => state.ready)).toEqual([true, true, true]);
    const lock = await redlock.acquire('created:nr', { fencing: true });
    expect(await redlock.tryAcquire('created:nr')).toBeNull();
    await lock.release();
    expect((await clientCounts(nodes)).every((count, i) => count > before[i])).toBe(true);
    // Its connections are closed when quit() resolves (QUIT answered, or the socket destroyed): a node frees a
    // client at its QUIT or at the end of its socket, before it serves a connection opened after that.
    await redlock.quit();
    expect(await clientCounts(nodes)).toEqual(before);
  });

  it('in a Nest module: forRoot(urls, { client: "node-redis" }) locks with @Locked', async () => {
    @Injectable()
    class Reports {
      @Locked('report:<0>')
      async build(id: string) {
        return `built ${id}`;
      }
    }
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, client: 'node-redis' })],
      providers: [Reports],
    });
    expect(await app.get(Reports).build('7')).toBe('built 7');
    await closeApps();
  });

  it('an unknown client kind, and a client package that is not installed, are refused saying what to do', () => {
    expect(() => new Redlock(nodes.urls, { client: 'valkey-glide' as never })).toThrow(
      /client must be 'ioredis' or 'node-redis'.*got "valkey-glide"/,
    );
    let caught: unknown;
    try {
      optionalPeer('redis-client-that-is-not-installed', 'npm install redis@5');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidArgumentError);
    expect(String(caught)).toMatch(/package 'redis-client-that-is-not-installed', which is not installed/);
    expect(String(caught)).toMatch(/npm install redis@5, or pass the clients your application already uses/);
  });
});

describe('a node-redis cluster as one node (3 primaries + 3 replicas)', () => {
  let cluster: LocalCluster;
  jest.setTimeout(60_000);
  beforeAll(async () => {
    cluster = await startCluster(3);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  async function connectedCluster() {
    const client = createCluster({
      rootNodes: cluster.startup.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
    });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  }

  it('locks, renews in batches per slot, inspects, lists and revokes across every primary', async () => {
    const client = await connectedCluster();
    // A loaded machine can hold a cluster's per-slot calls past the default 50 ms: the claim here is slots.
    const redlock = new Redlock([client], { logger: false, restartGuard: false, nodeTimeout: 500 });
    const errors: string[] = [];
    redlock.on('node-error', ({ error }) => errors.push(error.message));
    const locks: Lock[] = [];
    try {
      for (let i = 0; i < 30; i++)
        locks.push(await redlock.acquire(`nrc:${i}`, { ttl: 1_000, fencing: i % 2 === 0 }));
      const stops = locks.map((lock) => redlock.keepAlive(lock));
      await renewedPast(redlock, locks, 1_000); // past the ttl: every lock was renewed at least once
      stops.forEach((stop) => stop());
      expect(locks.filter((lock) => lock.signal.aborted).map((lock) => lock.resources[0])).toEqual([]);
      expect((await redlock.inspect('nrc:3')).state).toBe('held');
      expect((await redlock.holders({ prefix: 'nrc:' })).length).toBe(30);
      await redlock.revoke('nrc:4', { reason: 'test' });
      expect((await redlock.inspect('nrc:4')).state).toBe('free');
      expect(errors).toEqual([]);
    } finally {
      await Promise.all(locks.map((lock) => redlock.release(lock)));
      await redlock.quit();
      await client.close();
    }
  });

  it('a waiter wakes on the release announcement, heard by sharded pub/sub on the slot primary', async () => {
    const client = await connectedCluster();
    const redlock = new Redlock([client], { logger: false, restartGuard: false, nodeTimeout: 500 });
    try {
      const held = await redlock.acquire('nrc:wake', { ttl: 30_000 });
      const primary = await cluster.primaryOf(slotOf('redlock:{nrc:wake}'));
      const commands = await NodeCommands.open(
        cluster.nodes.nodes.filter((node) => node.url.endsWith(primary)),
      );
      const waiting = redlock.acquire('nrc:wake', { wait: 10_000 });
      // Asleep until the release: it subscribed on the slot's primary, then its attempt right after that ran.
      await commands.ran(subscribeTo('redlock:{nrc:wake}:released'), acquireOn('redlock:{nrc:wake}'));
      commands.close();
      // Routed by the key to the slot's primary (not read-only: no replica).
      const shardChannels = await client.sendCommand('redlock:{nrc:wake}', false, [
        'PUBSUB',
        'SHARDNUMSUB',
        'redlock:{nrc:wake}:released',
      ]);
      // The waiter listens with SSUBSCRIBE on the primary that owns the key's slot.
      expect(shardChannels).toEqual(['redlock:{nrc:wake}:released', 1]);
      await redlock.release(held);
      await redlock.release(await waiting);
      expect(redlock.stats.wokenByRelease).toBeGreaterThanOrEqual(1);
    } finally {
      await redlock.quit();
      await client.close();
    }
  });
});
