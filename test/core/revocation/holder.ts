/**
 * A holder in a process of its own, for the revocation spec: holds `RESOURCE` under `using()` (renewed) on the
 * nodes in `NODES`, tells the parent 'holding', and when the lock's signal aborts tells it why
 * ({ name, reason, message }) and how long after it started holding.
 */
import { LockRevokedError, Redlock } from '../../../lib';

async function main(): Promise<void> {
  const redlock = new Redlock(JSON.parse(process.env.NODES!) as string[], {
    logger: false,
    restartGuard: false,
    owner: 'holder-process',
  });
  await redlock.connect(5_000);
  await redlock
    .using(process.env.RESOURCE!, { ttl: 60_000 }, async (lock) => {
      const heldAt = Date.now();
      process.send!({ kind: 'holding', token: lock.fencingToken });
      const reason = await new Promise<unknown>((resolve) =>
        lock.signal.addEventListener('abort', () => resolve(lock.signal.reason), { once: true }),
      );
      const error = reason as Error;
      process.send!({
        kind: 'aborted',
        name: error?.name,
        revoked: error instanceof LockRevokedError,
        reason: error instanceof LockRevokedError ? error.reason : undefined,
        message: error?.message,
        after: Date.now() - heldAt,
        lost: redlock.stats.locksLost,
      });
    })
    .catch((error: Error) => process.send!({ kind: 'using-rejected', name: error.name }));
  await redlock.quit();
  process.exit(0);
}

void main().catch((error: Error) => {
  process.send!({ kind: 'failed', message: error.message });
  process.exit(1);
});
