import { Redlock } from '../../lib';
import { TcpProxy, startTcpProxy } from '../../test/support';
import { closeClients, connectClients } from '../adapters/clients';
import { Samples } from '../stats';
import { now } from '../timing';
import type { BenchContext, Scenario, ScenarioResult } from './types';

const TITLE = 'Beyond the mutex: readers, writers and permits';
const OURS = 'nestjs-redlock';
const SEMAPHORE = 'redis-semaphore Semaphore (1 node)';
const REDLOCK_SEMAPHORE = 'redis-semaphore RedlockSemaphore';
const PERMITS = 4;
/** The wide semaphore (issue "speed four"): `permits: 64` taken while 63 are held. */
const WIDE = 64;

/**
 * redis-semaphore's per-node decision over a quorum, enumerated: 3 clients, 3 nodes, limit 2, quorum 2. Each
 * node admits the first two arrivals; a client holds the semaphore when two nodes admitted it. Counts the
 * arrival orders (3! per node, 216 in all) in which all three clients hold it at once.
 */
export function overAdmittingOrders(): { orders: number; overAdmitting: number } {
  const perms: number[][] = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 0, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
  ];
  let overAdmitting = 0;
  let orders = 0;
  for (const a of perms)
    for (const b of perms)
      for (const c of perms) {
        orders++;
        const votes = [0, 0, 0];
        for (const order of [a, b, c]) for (const client of order.slice(0, 2)) votes[client]++;
        if (votes.every((v) => v >= 2)) overAdmitting++;
      }
  return { orders, overAdmitting };
}

/**
 * A permit of a `WIDE`-permit semaphore taken while all but one are held (by `holder`), beside a mutex taken
 * by the same instance, alternately, `iterations` times each: the acquire's p50 of both.
 */
export async function widePermitRun(
  redlock: Redlock,
  holder: Redlock,
  iterations: number,
): Promise<{ widePermitP50: number; mutexP50: number }> {
  const held = [];
  for (let i = 0; i < WIDE - 1; i++)
    held.push(await holder.acquire('s9:wide', { permits: WIDE, ttl: 60_000 }));
  const wide = new Samples();
  const mutex = new Samples();
  try {
    for (let i = 0; i < iterations; i++) {
      let began = now();
      const permit = await redlock.acquire('s9:wide', { permits: WIDE });
      wide.push(now() - began);
      await permit.release();
      began = now();
      const lock = await redlock.acquire('s9:mutex');
      mutex.push(now() - began);
      await lock.release();
    }
  } finally {
    await Promise.all(held.map((lock) => lock.release()));
  }
  return { widePermitP50: wide.p(50), mutexP50: mutex.p(50) };
}

interface PermitLock {
  acquire(): Promise<() => Promise<void>>;
}

/**
 * `workers` loops taking a permit (worker i through `takes[i % takes.length]`), holding it `holdMs`, counting
 * the holders at once in this process and the grants that found more than `limit`.
 */
async function permitsRun(
  takes: readonly PermitLock[],
  workers: number,
  durationMs: number,
  holdMs: number,
  limit: number,
): Promise<{ perSec: number; overAdmitted: number; maxHolders: number; errors: number }> {
  let holders = 0;
  let maxHolders = 0;
  let overAdmitted = 0;
  let cycles = 0;
  let errors = 0;
  const start = now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      const take = takes[worker % takes.length];
      while (now() < end) {
        let release: (() => Promise<void>) | undefined;
        try {
          release = await take.acquire();
        } catch {
          errors++;
          continue;
        }
        holders++;
        maxHolders = Math.max(maxHolders, holders);
        if (holders > limit) overAdmitted++;
        await new Promise((resolve) => setTimeout(resolve, holdMs));
        holders--;
        await release().catch(() => errors++);
        cycles++;
      }
    }),
  );
  return { perSec: (cycles / (now() - start)) * 1000, overAdmitted, maxHolders, errors };
}

/** Permits of `resource` (`permits` of them) through one of our instances. */
function ourPermits(redlock: Redlock, resource: string, permits: number): PermitLock {
  return {
    acquire: async () => {
      const lock = await redlock.acquire(resource, { permits, wait: 30_000 });
      return async () => void (await lock.release());
    },
  };
}

/** Permits through a redis-semaphore object made anew for each acquisition (its API: one per holder). */
function peerPermits(make: () => { acquire(): Promise<unknown>; release(): Promise<void> }): PermitLock {
  return {
    acquire: async () => {
      const semaphore = make();
      await semaphore.acquire();
      return () => semaphore.release();
    },
  };
}

/** One-way latency (ms) from instance i to node j in the skewed run: each node sees the instances in another order. */
const SKEW = [
  [0, 15, 30],
  [15, 30, 0],
  [30, 0, 15],
];
const SKEW_LIMIT = 2;

/**
 * Three instances, each with its own links to the first three nodes through proxies of different latency
 * (SKEW), take permits of one limit-2 resource at once: the counting check per node then sees the
 * instances arrive in different orders, as instances in different places do. Counts grants that found more
 * than the limit holding at once (every holder runs in this process).
 */
async function skewedRun(
  ports: readonly number[],
  durationMs: number,
  makeTake: (
    urls: readonly string[],
    instance: number,
  ) => Promise<{ take: PermitLock; close(): Promise<void> }>,
): Promise<number> {
  const proxies: TcpProxy[][] = [];
  const takers: { take: PermitLock; close(): Promise<void> }[] = [];
  try {
    for (let i = 0; i < SKEW.length; i++) {
      const row = await Promise.all(ports.slice(0, 3).map((port) => startTcpProxy(port)));
      row.forEach((proxy, j) => proxy.setLatency(SKEW[i][j]));
      proxies.push(row);
      takers.push(
        await makeTake(
          row.map((proxy) => proxy.url),
          i,
        ),
      );
    }
    // Two loops per instance, each holding its permit 5 ms.
    const takes = takers.map((taker) => taker.take);
    const run = await permitsRun(takes, takes.length * 2, durationMs, 5, SKEW_LIMIT);
    return run.overAdmitted;
  } finally {
    await Promise.all(takers.map((taker) => taker.close()));
    await Promise.all(proxies.flat().map((proxy) => proxy.close()));
  }
}

/** Readers streaming on one resource; a writer takes it `writes` times meanwhile: reads/s and its waits. */
async function readersAndWriter(
  redlock: Redlock,
  writer: Redlock,
  workers: number,
  durationMs: number,
  writes: number,
): Promise<{ readsPerSec: number; writerP50: number; writerP99: number }> {
  let reads = 0;
  let streaming = true;
  const start = now();
  const stream = Promise.all(
    Array.from({ length: workers }, async () => {
      while (streaming) {
        await redlock
          .using('s9:doc', { mode: 'read', wait: 30_000 }, async () => undefined)
          .then(
            () => reads++,
            () => undefined,
          );
      }
    }),
  );
  const waits = new Samples(1024);
  const gap = durationMs / (writes + 1);
  for (let i = 0; i < writes; i++) {
    await new Promise((resolve) => setTimeout(resolve, gap));
    const t0 = now();
    const lock = await writer.acquire('s9:doc', { wait: 30_000 });
    waits.push(now() - t0);
    await lock.release();
  }
  await new Promise((resolve) => setTimeout(resolve, gap));
  streaming = false;
  await stream;
  return { readsPerSec: (reads / (now() - start)) * 1000, writerP50: waits.p(50), writerP99: waits.p(99) };
}

/** Loads redis-semaphore from bench/node_modules, or says why it is not there. */
function redisSemaphore(): typeof import('redis-semaphore') | string {
  try {
    return require('redis-semaphore') as typeof import('redis-semaphore');
  } catch (error) {
    return `redis-semaphore is not installed in bench/ (${(error as Error).message.split('\n')[0]})`;
  }
}

/**
 * Scenario 9 (issue "more than a mutex"): readers per second on one resource with a writer's waits while they
 * stream, permits per second for `permits: 4`, and redis-semaphore's Semaphore and RedlockSemaphore on the
 * same permit work, with the holders seen at once beyond the limit counted in the same run.
 */
export const beyondMutex: Scenario = {
  id: 'beyondMutex',
  number: 9,
  title: TITLE,
  async run({ scale, urls, nodes, log }: BenchContext): Promise<ScenarioResult> {
    const ports = nodes.nodes.map((node) => node.port);
    const { workers, durationMs } = scale.throughput;
    const holdMs = 2;
    const rows: Record<string, Record<string, number>> = {};
    const notes: string[] = [];

    const redlock = new Redlock([...urls], { logger: false, restartGuard: false });
    const writer = new Redlock([...urls], { logger: false, restartGuard: false });
    try {
      await Promise.all([redlock.connect(), writer.connect()]);
      log(`  9 beyond the mutex · readers and a writer · ${OURS}`);
      const rw = await readersAndWriter(redlock, writer, workers, durationMs, 10);
      log(`  9 beyond the mutex · permits: ${PERMITS} · ${OURS}`);
      const permits = await permitsRun(
        [ourPermits(redlock, 's9:pool', PERMITS)],
        workers,
        durationMs,
        holdMs,
        PERMITS,
      );
      log(`  9 beyond the mutex · permits: ${WIDE} with ${WIDE - 1} held · ${OURS}`);
      const wide = await widePermitRun(redlock, writer, scale.uncontended.iterations);
      log(`  9 beyond the mutex · skewed links, limit ${SKEW_LIMIT} · ${OURS}`);
      const skewed = await skewedRun(ports, durationMs, async (proxied) => {
        const instance = new Redlock([...proxied], { logger: false, restartGuard: false, nodeTimeout: 200 });
        await instance.connect();
        return { take: ourPermits(instance, 's9:skew', SKEW_LIMIT), close: () => instance.quit() };
      });
      rows[OURS] = {
        overAdmittedSkewed: skewed,
        readsPerSec: rw.readsPerSec,
        writerWaitP50: rw.writerP50,
        writerWaitP99: rw.writerP99,
        permitsPerSec: permits.perSec,
        overAdmitted: permits.overAdmitted,
        maxHolders: permits.maxHolders,
        errors: permits.errors,
        widePermitP50: wide.widePermitP50,
        mutexP50: wide.mutexP50,
        widePermitOverMutex: wide.widePermitP50 / wide.mutexP50,
      };
    } finally {
      await Promise.all([redlock.quit(), writer.quit()]);
    }

    const peer = redisSemaphore();
    if (typeof peer === 'string') notes.push(peer);
    else {
      const clients = await connectClients(urls);
      try {
        // Its acquire can livelock on the skewed links (split votes, every attempt undone): bounded by the run,
        // 30 s at full scale as before, under a second in smoke instead of up to 30 s past the run's end.
        const options = { acquireTimeout: 6 * durationMs, retryInterval: 5, lockTimeout: 10_000 };
        for (const [name, make] of [
          [SEMAPHORE, () => new peer.Semaphore(clients[0], 's9:peer:one', PERMITS, options)],
          [REDLOCK_SEMAPHORE, () => new peer.RedlockSemaphore(clients, 's9:peer:quorum', PERMITS, options)],
        ] as const) {
          log(`  9 beyond the mutex · permits: ${PERMITS} · ${name}`);
          const run = await permitsRun([peerPermits(make)], workers, durationMs, holdMs, PERMITS);
          let skewed = NaN;
          if (name === REDLOCK_SEMAPHORE) {
            log(`  9 beyond the mutex · skewed links, limit ${SKEW_LIMIT} · ${name}`);
            skewed = await skewedRun(ports, durationMs, async (proxied) => {
              const own = await connectClients(proxied);
              const make = () => new peer.RedlockSemaphore(own, 's9:peer:skew', SKEW_LIMIT, options);
              return { take: peerPermits(make), close: () => closeClients(own) };
            });
          }
          rows[name] = {
            overAdmittedSkewed: skewed,
            readsPerSec: NaN,
            writerWaitP50: NaN,
            writerWaitP99: NaN,
            permitsPerSec: run.perSec,
            overAdmitted: run.overAdmitted,
            maxHolders: run.maxHolders,
            errors: run.errors,
            widePermitP50: NaN,
            mutexP50: NaN,
            widePermitOverMutex: NaN,
          };
        }
      } finally {
        await closeClients(clients);
      }
    }
    const { orders, overAdmitting } = overAdmittingOrders();
    notes.push(
      `${urls.length} nodes, ${workers} workers, ${durationMs} ms per run. Readers: ${workers} loops taking a read ` +
        'lock on one resource with nothing to do inside; a writer takes the write lock 10 times meanwhile ' +
        '(its wait: from the call to the grant). redis-semaphore has no read-write lock (no figures).',
      `Permits: ${workers} loops each taking one of ${PERMITS} permits of one resource, holding it ${holdMs} ms; ` +
        '"holders over the limit" counts grants that found more than ' +
        `${PERMITS} holders at once in this process (all holders run here, so this is the true count).`,
      `Permits: ${WIDE} with ${WIDE - 1} held: another instance holds ${WIDE - 1} permits of one resource; ` +
        `this one takes the last and releases it, alternating with a mutex, ${scale.uncontended.iterations} ` +
        'times each (acquire only, p50).',
      `Skewed links: 3 instances, each with links of 0, 15 and 30 ms one way (in another order per instance) to ` +
        `3 nodes, 2 loops each, taking one of ${SKEW_LIMIT} permits for 5 ms, ${durationMs} ms.`,
      `redis-semaphore's RedlockSemaphore counts holders on each node and accepts a majority: enumerating its ` +
        `per-node decisions for 3 clients, 3 nodes and a limit of 2, ${overAdmitting} of ${orders} arrival ` +
        'orders admit 3 holders, with no fault at all. Its permits expire on each client clock.',
    );
    return {
      id: 'beyondMutex',
      number: 9,
      title: TITLE,
      status: 'ok',
      baseline: OURS,
      metrics: [
        { key: 'readsPerSec', label: 'read locks/s (one resource)', unit: '/s', better: 'higher' },
        { key: 'writerWaitP50', label: 'writer wait p50 while readers stream', unit: 'ms', better: 'lower' },
        { key: 'writerWaitP99', label: 'writer wait p99 while readers stream', unit: 'ms', better: 'lower' },
        { key: 'permitsPerSec', label: `permits/s (permits: ${PERMITS})`, unit: '/s', better: 'higher' },
        { key: 'overAdmitted', label: 'grants over the limit', unit: '', better: 'lower', ratio: false },
        { key: 'maxHolders', label: 'most holders at once', unit: '', better: 'none', ratio: false },
        { key: 'errors', label: 'failed acquisitions', unit: '', better: 'lower', ratio: false },
        {
          key: 'widePermitP50',
          label: `permits: ${WIDE} with ${WIDE - 1} held, acquire p50`,
          unit: 'ms',
          better: 'lower',
        },
        {
          key: 'mutexP50',
          label: 'a mutex, same instance and run, acquire p50',
          unit: 'ms',
          better: 'lower',
        },
        {
          key: 'widePermitOverMutex',
          label: `permits: ${WIDE} ÷ mutex (target ≤ 2)`,
          unit: '×',
          better: 'lower',
          ratio: false,
        },
        {
          key: 'overAdmittedSkewed',
          label: `grants over the limit, skewed links (limit ${SKEW_LIMIT})`,
          unit: '',
          better: 'lower',
          ratio: false,
        },
      ],
      rows,
      notes,
    };
  },
};
