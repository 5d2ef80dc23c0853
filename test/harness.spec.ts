import * as net from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import { startRedisNodes, startTcpProxy, type RedisNodes, type TcpProxy } from './support';

// The harness every other test relies on: if a fault it claims to inject does not happen, the
// fault tests built on it would pass vacuously. So each fault is checked against a real redis-server.

const clients: Redis[] = [];
/** A client whose errors are expected (faults) and which afterAll disconnects. */
function track(client: Redis): Redis {
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}

/** A client through a proxy; see the harness's redis() for why disconnectTimeout is short. */
function proxyClient(proxy: TcpProxy, options: RedisOptions = {}): Redis {
  return track(new Redis(proxy.url, { maxRetriesPerRequest: 1, disconnectTimeout: 100, ...options }));
}

const TIMEOUT = Symbol('timeout');
function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMEOUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMEOUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMEOUT), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

async function runId(client: Redis): Promise<string> {
  const info = await client.info('server');
  const match = /run_id:(\w+)/.exec(info);
  if (!match) throw new Error(`no run_id in INFO server:\n${info}`);
  return match[1];
}

async function pingMs(client: Redis): Promise<number> {
  const start = performance.now();
  expect(await client.ping()).toBe('PONG');
  return performance.now() - start;
}

describe('test/support harness (real redis-server)', () => {
  let nodes: RedisNodes;
  const proxies: TcpProxy[] = [];

  beforeAll(async () => {
    nodes = await startRedisNodes(3);
  });

  afterEach(() => {
    for (const client of clients.splice(0)) client.disconnect();
  });

  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await nodes?.stop();
  });

  it('starts 3 independent nodes that answer PING', async () => {
    expect(nodes.source).toBe('path');
    expect(nodes.nodes).toHaveLength(3);
    expect(new Set(nodes.nodes.map((n) => n.port)).size).toBe(3);
    expect(new Set(nodes.nodes.map((n) => n.pid)).size).toBe(3);
    expect(nodes.urls).toEqual(nodes.nodes.map((n) => `redis://127.0.0.1:${n.port}`));

    const [a, b, c] = nodes.nodes.map((n) => track(n.redis()));
    for (const client of [a, b, c]) expect(await client.ping()).toBe('PONG');

    await a.set('harness:only-on-0', 'x');
    expect(await a.get('harness:only-on-0')).toBe('x');
    expect(await b.get('harness:only-on-0')).toBeNull();
    expect(await c.get('harness:only-on-0')).toBeNull();
  });

  it('flushAll() empties every node', async () => {
    const all = nodes.nodes.map((n) => track(n.redis()));
    await Promise.all(all.map((client, i) => client.set(`harness:flush:${i}`, '1')));
    await nodes.flushAll();
    for (const client of all) expect(await client.dbsize()).toBe(0);
  });

  it('pause() stops a node answering; resume() lets the pending command answer', async () => {
    const node = nodes.nodes[1];
    const client = track(node.redis());
    expect(await client.ping()).toBe('PONG');

    await node.pause();
    expect(node.paused).toBe(true);
    const pending = client.ping();
    expect(await within(pending, 200)).toBe(TIMEOUT);

    await node.resume();
    expect(node.paused).toBe(false);
    expect(await pending).toBe('PONG');
  });

  it('restartEmpty() loses the data and comes back as a new server on the same port', async () => {
    const node = nodes.nodes[2];
    const before = track(node.redis());
    await before.set('harness:survives?', 'no');
    const oldRunId = await runId(before);
    const oldPid = node.pid!;
    const port = node.port;

    await node.restartEmpty();

    expect(node.port).toBe(port);
    expect(node.pid).not.toBe(oldPid);
    expect(isAlive(oldPid)).toBe(false);
    const after = track(node.redis());
    expect(await after.get('harness:survives?')).toBeNull();
    expect(await runId(after)).not.toBe(oldRunId);
  });

  it('kill() frees the port; start() brings the node back on it', async () => {
    const node = nodes.nodes[0];
    const oldPid = node.pid!;

    await node.kill();
    expect(node.running).toBe(false);
    expect(node.pid).toBeUndefined();
    expect(isAlive(oldPid)).toBe(false);
    expect(await connectionRefused(node.port)).toBe(true);
    await expect(node.pause()).rejects.toThrow(/not running/);

    await node.start();
    expect(node.running).toBe(true);
    const client = track(node.redis());
    expect(await client.ping()).toBe('PONG');
  });

  it('TcpProxy forwards to its target', async () => {
    const node = nodes.nodes[0];
    const proxy = await startTcpProxy(node.port);
    proxies.push(proxy);
    expect(proxy.url).toBe(`redis://127.0.0.1:${proxy.port}`);

    const viaProxy = proxyClient(proxy);
    await viaProxy.set('harness:via-proxy', 'yes');
    const direct = track(node.redis());
    expect(await direct.get('harness:via-proxy')).toBe('yes');
  });

  it('TcpProxy latency delays each direction (lower bound only)', async () => {
    const proxy = await startTcpProxy(nodes.nodes[1].port);
    proxies.push(proxy);
    const client = proxyClient(proxy);
    await pingMs(client); // connect first so the handshake is not measured

    proxy.setLatency(50);
    // 50 ms out + 50 ms back; a few ms of slack for clock rounding, no upper bound (shared machines).
    expect(await pingMs(client)).toBeGreaterThanOrEqual(95);
    // Pipelined commands keep their order through the delay queues.
    const results = await Promise.all([client.set('harness:order', '1'), client.incr('harness:order')]);
    expect(results).toEqual(['OK', 2]);

    proxy.setLatency(0);
    expect(await client.ping()).toBe('PONG');
  });

  it('TcpProxy cut() makes commands fail; heal() lets a new client connect', async () => {
    const proxy = await startTcpProxy(nodes.nodes[1].port);
    proxies.push(proxy);
    const client = proxyClient(proxy);
    expect(await client.ping()).toBe('PONG');

    proxy.cut();
    await expect(client.ping()).rejects.toThrow();
    const newcomer = proxyClient(proxy, { retryStrategy: () => null, lazyConnect: true });
    await expect(newcomer.connect().then(() => newcomer.ping())).rejects.toThrow();

    proxy.heal();
    const healed = proxyClient(proxy);
    expect(await healed.ping()).toBe('PONG');
  });

  it('external nodes (REDLOCK_TEST_NODES) are used as given and refuse faults', async () => {
    const saved = process.env.REDLOCK_TEST_NODES;
    process.env.REDLOCK_TEST_NODES = nodes.urls.slice(0, 2).join(', ');
    try {
      const external = await startRedisNodes(2);
      expect(external.source).toBe('external');
      expect(external.urls).toEqual(nodes.urls.slice(0, 2));
      expect(external.nodes[0].pid).toBeUndefined();
      await expect(external.nodes[0].kill()).rejects.toThrow(/external nodes .* cannot be faulted/);
      await expect(external.nodes[1].pause()).rejects.toThrow(/cannot be faulted/);
      await expect(startRedisNodes(3)).rejects.toThrow(/lists 2 node\(s\) but the test needs 3/);

      await external.stop();
      const client = track(external.nodes[0].redis());
      expect(await client.ping()).toBe('PONG'); // stop() leaves external nodes alone
    } finally {
      if (saved === undefined) delete process.env.REDLOCK_TEST_NODES;
      else process.env.REDLOCK_TEST_NODES = saved;
    }
  });

  // Loads testcontainers for real: it must neither crash nor hang (detection is bounded at ~3 s). Without a
  // container runtime it fails with a clear error; with one, the node it starts must answer.
  it('the docker source either works or fails with a clear error, within the detection bound', async () => {
    const outcome = await startRedisNodes(1, { source: 'docker' }).then(
      (started) => started,
      (error: Error) => error,
    );
    if (outcome instanceof Error) {
      expect(outcome.message).toMatch(/no container runtime answered/);
    } else {
      const client = outcome.nodes[0].redis();
      try {
        expect(await client.ping()).toBe('PONG');
      } finally {
        client.disconnect();
        await outcome.stop();
      }
    }
  });

  it('stop() kills every process it started, paused ones included, and is idempotent', async () => {
    await nodes.nodes[2].pause();
    const pids = nodes.nodes.map((n) => n.pid!);
    expect(pids.every(isAlive)).toBe(true);

    await Promise.all([nodes.stop(), nodes.stop()]);
    await nodes.stop();

    for (const pid of pids)
      expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
    expect(nodes.nodes.every((n) => !n.running)).toBe(true);
  });
});
