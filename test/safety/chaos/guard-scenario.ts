import { Lock, Redlock, RedlockError } from '../../../lib';
import type { ChaosCluster } from './cluster';
import { delay } from '../../support/waits';

/** One run of the restart-guard scenario. */
export interface GuardAttempt {
  /** B got the lock while A's was still valid: two holders. */
  readonly granted: boolean;
  /**
   * The attempt tested what it is about: the restarted node booted in the same wall-clock second in which A
   * acquired, at least 300 ms into it — the case where a guard reading whole seconds of uptime as a lower
   * bound clears before A's lock ends — and node 0 was seen refusing B (its restart guard answered). When
   * false and nothing was granted, the attempt proved nothing either way.
   */
  readonly conclusive: boolean;
  /** B's attempts in which node 0 answered `refused` (restart guard). */
  readonly refusedByRestarted: number;
  /** B's attempts while A's lock was valid. */
  readonly polls: number;
  /** Wall-clock ms (within the second) at which A acquired, and by which node 0 had started again. */
  readonly acquiredWallMs: number;
  readonly startedWallMs: number;
  readonly grantedMsAfterStart?: number;
  readonly firstValidForMs?: number;
}

/**
 * A (client 0's proxies, cut from nodes 3 and 4) takes a lock on exactly {0, 1, 2}, about a third into a
 * wall-clock second; node 0 restarts empty at once; B (client 1's proxies, cut from nodes 1 and 2) polls
 * through {0, 3, 4} until A's validity has run out. The nodes must be older than the window.
 */
export async function restartUnderHolder(cluster: ChaosCluster, ttl: number): Promise<GuardAttempt> {
  const make = (client: number) =>
    new Redlock(
      cluster.proxies[client].map((proxy) => proxy.url),
      { ttl, restartGuard: ttl, fencing: true, nodeTimeout: 100, logger: false },
    );
  const a = make(0);
  const b = make(1);
  let held: Lock | undefined;
  let second: Lock | null = null;
  try {
    await Promise.all([a.connect(2_000), b.connect(2_000)]);
    cluster.cut(0, 3);
    cluster.cut(0, 4);
    cluster.cut(1, 1);
    cluster.cut(1, 2);
    // One timer to 300 ms into a wall-clock second (another second if it fired too late for 300–350 ms).
    while (Date.now() % 1000 < 300 || Date.now() % 1000 > 350)
      await delay((1_300 - (Date.now() % 1000)) % 1000);
    held = await a.acquire('guard-phase', { wait: 1_000 });
    const acquiredWall = Date.now();
    await cluster.restartEmpty(0);
    const startedWall = Date.now();
    const startedAt = cluster.now();
    let grantedAt = 0;
    let remainingThen = 0;
    let polls = 0;
    let refusedByRestarted = 0;
    const restarted = cluster.proxies[1][0].url.replace(/^redis:\/\//, '');
    while (held.remainingTime > 0 && !second) {
      polls++;
      second = await b.tryAcquire('guard-phase').catch((error: unknown) => {
        const votes = error instanceof RedlockError ? error.votes : [];
        if (votes.some((vote) => vote.node === restarted && vote.outcome === 'refused')) refusedByRestarted++;
        return null;
      });
      if (second) {
        grantedAt = cluster.now();
        remainingThen = held.remainingTime;
      } else await delay(10);
    }
    return {
      granted: second !== null,
      conclusive:
        Math.floor(startedWall / 1000) === Math.floor(acquiredWall / 1000) && refusedByRestarted > 0,
      refusedByRestarted,
      polls,
      acquiredWallMs: acquiredWall % 1000,
      startedWallMs: startedWall % 1000,
      ...(second ? { grantedMsAfterStart: Math.round(grantedAt - startedAt) } : {}),
      ...(second ? { firstValidForMs: Math.round(remainingThen) } : {}),
    };
  } finally {
    if (second) await b.release(second);
    if (held) await a.release(held);
    await cluster.healAll();
    await Promise.all([a.quit(), b.quit()]);
  }
}
