import { IoredisAdapter, LockHandle, createRedlock } from 'redlock-universal';
import { closeClients, connectClients } from './clients';
import type { BenchLock, Implementation, SetupOptions } from './types';

interface UniversalHandle {
  readonly lock: ReturnType<typeof createRedlock>;
  readonly handle: LockHandle;
}

/**
 * redlock-universal's distributed lock (`createRedlock`). Its API binds a lock object to one key, so each
 * acquisition builds one (a cheap constructor), as a caller with dynamic keys would.
 */
export const redlockUniversal: Implementation = {
  name: 'redlock-universal',
  pkg: 'redlock-universal',
  settings:
    'createRedlock({ adapters: IoredisAdapter(default ioredis clients), key, ttl }) per acquisition; defaults: ' +
    'retryAttempts 3, retryDelay 200 ms (≈ 0.6 s budget), clockDriftFactor 0.01, per-command timeout 5 s',
  extension: 'using(): extends when 20 % of the ttl is left',
  retries: true,
  async setup({ urls, retries }: SetupOptions): Promise<BenchLock> {
    const clients = await connectClients(urls);
    const adapters = clients.map((client) => new IoredisAdapter(client));
    const retryAttempts = retries === undefined ? {} : { retryAttempts: retries };
    return {
      name: 'redlock-universal',
      async acquire(resource, ttl): Promise<UniversalHandle> {
        const lock = createRedlock({ adapters, key: resource, ttl, ...retryAttempts });
        return { lock, handle: await lock.acquire() };
      },
      async release(handle) {
        const { lock, handle: inner } = handle as UniversalHandle;
        await lock.release(inner);
      },
      async holdWhile(resource, ttl, work) {
        await createRedlock({ adapters, key: resource, ttl, ...retryAttempts }).using(work);
      },
      teardown: () => closeClients(clients),
    };
  },
};
