import NodeRedlock, { Lock } from 'redlock';
import { closeClients, connectClients } from './clients';
import type { BenchLock, Implementation, SetupOptions } from './types';

/** node-redlock 5.0.0-beta.2 with its default settings over default ioredis clients. */
export const nodeRedlock: Implementation = {
  name: 'node-redlock',
  pkg: 'redlock@5.0.0-beta.2',
  settings:
    'new Redlock(clients) over default ioredis clients; defaults: retryCount 10, retryDelay 200 ms, ' +
    'retryJitter 100 ms (≈ 2.2 s budget), driftFactor 0.01',
  extension: 'using(): extends when 500 ms (automaticExtensionThreshold) are left',
  retries: true,
  async setup({ urls, retries }: SetupOptions): Promise<BenchLock> {
    const clients = await connectClients(urls);
    const redlock = new NodeRedlock(clients, retries === undefined ? {} : { retryCount: retries });
    redlock.on('error', () => undefined);
    return {
      name: 'node-redlock',
      acquire: (resource, ttl) => redlock.acquire([resource], ttl),
      release: async (handle) => {
        await redlock.release(handle as Lock);
      },
      holdWhile: (resource, ttl, work) => redlock.using([resource], ttl, work),
      teardown: () => closeClients(clients),
    };
  },
};
