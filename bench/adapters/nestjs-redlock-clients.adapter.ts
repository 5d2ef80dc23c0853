// nestjs-redlock over the other Redis clients it accepts as nodes: what a client costs, beside the default
// (`new Redlock(urls)`: its own ioredis clients and its own command batching). Scenarios 1–3 only.
import Redis from 'ioredis';
import Valkey from 'iovalkey';
import { createClient } from 'redis';
import { NodeSpec, Redlock } from '../../lib/redis';
import type { ScenarioId } from '../scenarios/types';
import { benchLockOf } from './nestjs-redlock.adapter';
import type { BenchLock, ImplName, Implementation, SetupOptions } from './types';

/** The scenarios these rows take part in: latency, throughput and hand-over are where a client shows. */
export const CLIENT_SCENARIOS: readonly ScenarioId[] = ['uncontended', 'throughput', 'contention'];

/** Clients the application owns: created and connected before the Redlock, closed after it. */
interface AppClients {
  readonly specs: NodeSpec[];
  close(): Promise<void>;
}

const SAME_SETTINGS =
  'otherwise as nestjs-redlock: defaults (nodeTimeout 50 ms, restartGuard on, release announcements) except wait = 10 s';

function variant(
  name: ImplName,
  pkg: string,
  settings: string,
  open: (urls: readonly string[]) => Promise<AppClients>,
  options: { readonly client?: 'node-redis' } = {},
): Implementation {
  return {
    name,
    pkg,
    settings: `${settings}; ${SAME_SETTINGS} (scenarios 1–3 only)`,
    extension: 'using(): auto-extension renews at a third of the ttl',
    retries: true,
    scenarios: CLIENT_SCENARIOS,
    async setup({ urls, waitBudgetMs, ttl }: SetupOptions): Promise<BenchLock> {
      const clients = await open(urls);
      const redlock = new Redlock(clients.specs, { logger: false, wait: waitBudgetMs, ttl, ...options });
      try {
        const states = await redlock.connect(5_000);
        const down = states.filter((state) => !state.ready);
        if (down.length > 0) throw new Error(`${name}: ${down.map((s) => s.node).join(', ')} not ready`);
      } catch (error) {
        await redlock.quit().catch(() => undefined);
        await clients.close();
        throw error;
      }
      return benchLockOf(name, redlock, () => clients.close());
    },
  };
}

/** node-redis 5 clients as an application creates them: `createClient({ url })`, defaults, connected. */
async function nodeRedisClients(urls: readonly string[]): Promise<AppClients> {
  const clients = urls.map((url) => createClient({ url }).on('error', () => undefined));
  await Promise.all(clients.map((client) => client.connect()));
  return {
    specs: clients as NodeSpec[],
    close: async () => {
      await Promise.all(clients.map((client) => client.close().catch(() => client.destroy())));
    },
  };
}

/** ioredis-API clients as an application creates them (`new X(url)`, defaults), connected before use. */
async function ioredisLikeClients(
  urls: readonly string[],
  create: (url: string) => Redis | Valkey,
): Promise<AppClients> {
  const clients = urls.map((url) => create(url));
  for (const client of clients) client.on('error', () => undefined);
  await Promise.all(clients.map((client) => client.connect()));
  return {
    specs: clients as NodeSpec[],
    close: async () => {
      await Promise.all(clients.map((client) => client.quit().catch(() => undefined)));
      for (const client of clients) client.disconnect();
    },
  };
}

export const nestjsRedlockNodeRedis = variant(
  'nestjs-redlock (node-redis)',
  'nestjs-redlock + redis (node-redis 5)',
  'new Redlock(clients): node-redis clients passed in (createClient({ url }), its defaults, connected first); ' +
    'node-redis writes the commands of one event-loop turn together, no batcher of ours',
  nodeRedisClients,
);

export const nestjsRedlockNodeRedisCreated = variant(
  'nestjs-redlock (node-redis, created)',
  'nestjs-redlock + redis (node-redis 5)',
  "new Redlock(urls, { client: 'node-redis' }): node-redis clients the library creates (offline queue off)",
  // URLs: the library creates the clients, and quit() closes them.
  async (urls) => ({ specs: [...urls], close: async () => undefined }),
  { client: 'node-redis' },
);

export const nestjsRedlockIovalkey = variant(
  'nestjs-redlock (iovalkey)',
  'nestjs-redlock + iovalkey',
  'new Redlock(clients): iovalkey clients passed in (new Valkey(url), its defaults); used as ioredis clients ' +
    'passed in are: commands sent one by one, no batcher of ours (the clients are not the library’s)',
  (urls) => ioredisLikeClients(urls, (url) => new Valkey(url, { lazyConnect: true })),
);

export const nestjsRedlockIoredisPassedIn = variant(
  'nestjs-redlock (ioredis, passed in)',
  'nestjs-redlock + ioredis',
  'new Redlock(clients): ioredis clients passed in (new Redis(url), its defaults); commands sent one by one, ' +
    'no batcher of ours (the clients are not the library’s): separates the client from who owns it',
  (urls) => ioredisLikeClients(urls, (url) => new Redis(url, { lazyConnect: true })),
);
