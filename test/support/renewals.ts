import type { Lock, Redlock } from '../../lib';

/**
 * Resolves once renewals carried the validity of every one of `locks` `ms` past where it ended when this was
 * called (each lock's deadline moved by `ms` or more, by its `extended` events); rejects as soon as one of
 * them is lost. For "kept alive through n ttls": with `ms` = n × ttl, every lock was renewed while still
 * valid at least n ttls after its validity first ran out — what a sleep of n ttls then a look hoped for.
 */
export function renewedPast(redlock: Redlock, locks: readonly Lock[], ms: number): Promise<void> {
  const targets = new Map(locks.map((lock) => [lock, lock.validUntil + ms]));
  return new Promise<void>((resolve, reject) => {
    const stops: (() => void)[] = [];
    const finish = (error?: Error) => {
      stops.forEach((stop) => stop());
      if (error) reject(error);
      else resolve();
    };
    const check = () => {
      if ([...targets].every(([lock, target]) => lock.validUntil >= target)) finish();
    };
    stops.push(redlock.on('extended', check));
    stops.push(
      redlock.on('lost', ({ resources, error }) => {
        if (locks.some((lock) => lock.resources.join() === resources.join()))
          finish(new Error(`${resources.join()} was lost while kept alive: ${error.message}`));
      }),
    );
    check();
  });
}

/**
 * Resolves once every one of `locks` was extended `times` times or more (by its `extended` events from now on,
 * a renewal round each for locks kept alive); rejects as soon as one of them is lost.
 */
export function renewedTimes(redlock: Redlock, locks: readonly Lock[], times: number): Promise<void> {
  const counts = new Map(locks.map((lock) => [lock.resources.join(), 0]));
  return new Promise<void>((resolve, reject) => {
    const stops: (() => void)[] = [];
    const finish = (error?: Error) => {
      stops.forEach((stop) => stop());
      if (error) reject(error);
      else resolve();
    };
    stops.push(
      redlock.on('extended', ({ resources }) => {
        const name = resources.join();
        const count = counts.get(name);
        if (count === undefined) return;
        counts.set(name, count + 1);
        if ([...counts.values()].every((n) => n >= times)) finish();
      }),
    );
    stops.push(
      redlock.on('lost', ({ resources, error }) => {
        if (counts.has(resources.join()))
          finish(new Error(`${resources.join()} was lost while kept alive: ${error.message}`));
      }),
    );
  });
}
