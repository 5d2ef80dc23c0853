// The core and its ioredis layer only: lib/index.ts would also load the Nest layer (@nestjs/*, rxjs: ~560
// modules, ~0.2 s of CPU in each child process of scenarios 7 and 8).
import { Lock } from '../../lib/core';
import { Redlock } from '../../lib/redis';
import type { BenchLock, ImplName, Implementation, SetupOptions } from './types';

/** The bench's face of a connected Redlock; `close` runs after its quit() (clients the app owns). */
export function benchLockOf(
  name: ImplName,
  redlock: Redlock,
  close: () => Promise<void> = async () => undefined,
): BenchLock {
  return {
    name,
    acquire: (resource, ttl) => redlock.acquire(resource, { ttl }),
    release: async (handle) => {
      await redlock.release(handle as Lock);
    },
    holdWhile: (resource, ttl, work) => redlock.using(resource, { ttl }, work),
    teardown: async () => {
      await redlock.quit();
      await close();
    },
  };
}

/** Our Redlock on the nodes of a scenario, with `options` over the bench's wait budget and ttl. */
async function ourLock(
  name: ImplName,
  { urls, waitBudgetMs, ttl }: SetupOptions,
  options: { readonly restartGuard?: false; readonly fair?: true } = {},
): Promise<BenchLock> {
  const redlock = new Redlock([...urls], { logger: false, wait: waitBudgetMs, ttl, ...options });
  const states = await redlock.connect(5_000);
  const down = states.filter((state) => !state.ready);
  if (down.length > 0) throw new Error(`${name}: ${down.map((s) => s.node).join(', ')} not ready`);
  return benchLockOf(name, redlock);
}

/** This library's core, with the clients it creates itself (auto-pipelining on, offline queue off). */
export const nestjsRedlock: Implementation = {
  name: 'nestjs-redlock',
  pkg: 'nestjs-redlock (lib/core, this repo)',
  settings:
    'new Redlock(urls): its own clients (its own batching instead of auto-pipelining, no offline queue); defaults — nodeTimeout 50 ms, ' +
    'driftFactor 0.01, restartGuard on (window = max ttl), fencing off, waiters woken by release announcements ' +
    '(pub/sub) else backoff 10 ms ×5 up to 200 ms ±50 % — except wait = 10 s',
  extension: 'using(): auto-extension renews at a third of the ttl',
  retries: true,
  setup: (options) => ourLock('nestjs-redlock', options),
};

/**
 * The same without the restart guard (scenario 1 only): what the guard costs a sequential cycle, and the row
 * issue 23's "p50 ≤ 1.0 × every peer with the guard off" reads (the peers have no guard).
 */
export const nestjsRedlockGuardOff: Implementation = {
  name: 'nestjs-redlock (guard off)',
  pkg: 'nestjs-redlock (lib/core, this repo)',
  settings: 'as nestjs-redlock, with restartGuard: false (scenario 1 only)',
  extension: 'using(): auto-extension renews at a third of the ttl',
  retries: true,
  scenarios: ['uncontended'],
  setup: (options) => ourLock('nestjs-redlock (guard off)', options, { restartGuard: false }),
};

/** The same with fair waiting (docs/DESIGN.md §18), in scenario 10 only: what ordering waiters costs and gives. */
export const nestjsRedlockFair: Implementation = {
  name: 'nestjs-redlock (fair)',
  pkg: 'nestjs-redlock (lib/core, this repo)',
  settings: 'as nestjs-redlock, with fair: true (scenario 10 only)',
  extension: 'using(): auto-extension renews at a third of the ttl',
  retries: true,
  scenarios: ['fairness'],
  setup: (options) => ourLock('nestjs-redlock (fair)', options, { fair: true }),
};
