import { createHash, randomBytes } from 'node:crypto';
import { ACQUIRE_SCRIPT, RELEASE_SCRIPT, acquireCall } from '../../lib/redis/scripts';
import { closeClients, connectClients } from './clients';
import type { BenchLock, ImplName, Implementation, SetupOptions } from './types';

/** Owner-checked delete: the least a correct release must do. */
const RELEASE_SOURCE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const RELEASE_SHA = createHash('sha1').update(RELEASE_SOURCE).digest('hex');

/**
 * The acquire script's KEYS and ARGV exactly as nestjs-redlock lays them out for a default lock (a writer:
 * readers and intent keys, intent ttl 800 ms; restart guard on, window = ttl; no fencing; the server's uptime
 * as read at connect, so the guard takes the same fast path), from the same function: a hand-written layout
 * went stale when the guard keys moved to KEYS.
 */
function scriptArgs(key: string, value: string, ttl: number, server: ServerRun): (string | number)[] {
  const call = acquireCall(
    {
      keys: [key],
      fenceKeys: [],
      owner: value,
      ttl,
      guardWindow: ttl,
      guardKey: 'floor:!boot',
      mode: 'write',
      readerKeys: [`${key}:readers`],
      intentKeys: [`${key}:intent`],
      intent: value,
      intentTtl: 800,
    },
    server.runId,
    false,
    'floor:!boot',
    server.uptime,
  );
  return [call.keys.length, ...call.keys, ...call.args];
}

/** A node's run_id and a lower bound of its uptime (ms), as nestjs-redlock learns them at connect. */
interface ServerRun {
  readonly runId: string;
  readonly uptime: number;
}

interface FloorHandle {
  readonly key: string;
  readonly value: string;
}

/** How a floor variant talks to the nodes. */
interface FloorVariant {
  readonly autoPipelining: boolean;
  /**
   * Send nestjs-redlock's own acquire and release scripts (restart guard on its fast path, release
   * announcement) instead of SET NX and a bare owner-checked DEL: what the Redis side of its safety costs,
   * without its client code.
   */
  readonly scripts: boolean;
}

/**
 * The physical floor of Redlock over N nodes: `SET key value NX PX ttl` to every node at once, done the
 * moment a majority said OK (or can no longer say it), then `EVALSHA release` to every node at once. No
 * validation, no timers, no retry, no validity check: what any implementation must at least pay.
 * With `scripts`, the same skeleton sends nestjs-redlock's Lua scripts instead ("floor+scripts", with or
 * without auto-pipelining): the Redis-side cost of its safety, apart from its client code.
 * Owner values are a per-process random prefix plus a counter (unique, and the cheapest unique value).
 */
function floor(name: ImplName, { autoPipelining, scripts }: FloorVariant): Implementation {
  return {
    name,
    pkg: autoPipelining ? 'raw ioredis, enableAutoPipelining' : 'raw ioredis',
    settings:
      `ioredis clients${autoPipelining ? ' with enableAutoPipelining' : ' (defaults)'}; ` +
      (scripts
        ? "nestjs-redlock's acquire script (EVALSHA, restart guard on its run_id fast path) to all nodes in " +
          'parallel, decided at quorum; its release script (EVALSHA, as sent by nestjs-redlock) to all nodes in ' +
          'parallel; no retry'
        : 'SET NX PX to all nodes in parallel, decided at quorum; owner-checked DEL (EVALSHA) to all nodes in ' +
          'parallel; no retry'),
    extension: 'none: held by its ttl',
    retries: false,
    async setup({ urls }: SetupOptions): Promise<BenchLock> {
      const clients = await connectClients(urls, autoPipelining ? { enableAutoPipelining: true } : {});
      await Promise.all(
        clients.map((client) =>
          Promise.all(
            [RELEASE_SOURCE, ACQUIRE_SCRIPT.source, RELEASE_SCRIPT.source].map((source) =>
              client.script('LOAD', source),
            ),
          ),
        ),
      );
      // The run_id and uptime each node reports: the acquire script's restart guard then takes its fast path.
      const servers = await Promise.all(
        clients.map(async (client): Promise<ServerRun> => {
          const info = await client.info('server');
          const seconds = Number(/uptime_in_seconds:(\d+)/.exec(info)?.[1] ?? 0);
          return { runId: /run_id:(\w+)/.exec(info)?.[1] ?? '', uptime: Math.max(0, seconds - 1) * 1000 };
        }),
      );
      const quorum = (clients.length >> 1) + 1;
      const prefix = randomBytes(12).toString('base64url');
      let counter = 0;

      const releaseAll = (key: string, value: string): Promise<unknown> =>
        Promise.all(
          clients.map((client) =>
            // Our release script by digest, as nestjs-redlock sends it (loaded above).
            client.evalsha(scripts ? RELEASE_SCRIPT.sha : RELEASE_SHA, 1, key, value),
          ),
        );
      const acquireOn = (index: number, key: string, value: string, ttl: number): Promise<boolean> =>
        scripts
          ? clients[index]
              .evalsha(ACQUIRE_SCRIPT.sha, ...(scriptArgs(key, value, ttl, servers[index]) as [number]))
              // A grant is `{1, token, time}` (the server's TIME rides along since the clock-step check).
              .then((reply) => (Array.isArray(reply) ? reply[0] : reply) === 1)
          : clients[index].set(key, value, 'PX', ttl, 'NX').then((reply) => reply === 'OK');

      const lock: BenchLock = {
        name,
        acquire(resource, ttl): Promise<FloorHandle> {
          const key = `floor:${resource}`;
          const value = `${prefix}:${++counter}`;
          return new Promise((resolve, reject) => {
            let yes = 0;
            let no = 0;
            let decided = false;
            const vote = (ok: boolean): void => {
              if (ok) yes++;
              else no++;
              if (decided) return;
              if (yes >= quorum) {
                decided = true;
                resolve({ key, value });
              } else if (clients.length - no < quorum) {
                decided = true;
                releaseAll(key, value).then(
                  () => reject(new Error(`floor: ${resource} is busy`)),
                  () => reject(new Error(`floor: ${resource} is busy`)),
                );
              }
            };
            for (let index = 0; index < clients.length; index++) {
              acquireOn(index, key, value, ttl).then(vote, () => vote(false));
            }
          });
        },
        async release(handle) {
          const { key, value } = handle as FloorHandle;
          await releaseAll(key, value);
        },
        async holdWhile(resource, ttl, work) {
          const handle = await lock.acquire(resource, ttl);
          try {
            await work();
          } finally {
            await lock.release(handle);
          }
        },
        teardown: () => closeClients(clients),
      };
      return lock;
    },
  };
}

export const rawFloor = floor('floor', { autoPipelining: false, scripts: false });
export const rawFloorAutoPipelining = floor('floor+autopipelining', { autoPipelining: true, scripts: false });
export const rawFloorScripts = floor('floor+scripts', { autoPipelining: false, scripts: true });
export const rawFloorScriptsAutoPipelining = floor('floor+scripts+autopipelining', {
  autoPipelining: true,
  scripts: true,
});
