import { type LockNode, Redlock } from '../../../lib';

/**
 * One waiter in a process of its own (fair-processes.spec.ts): argv = JSON of { urls, resource, fair, deaf }.
 * Prints `asked` each time a quorum of its nodes answered an attempt, `place <n>` on each `waiting` event,
 * `granted` once it holds the lock (which it releases after a short hold), then exits.
 */
interface Job {
  readonly urls: string[];
  readonly resource: string;
  readonly fair: boolean;
  /** Hears no release announcements and retries slowly (every ~400 ms). */
  readonly deaf: boolean;
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2]) as Job;
  const plain = new Redlock(job.urls, { logger: false, restartGuard: false });
  await plain.connect();
  let answers = 0;
  const nodes = plain.nodes.map(
    (node) =>
      new Proxy(node, {
        get(target, property, receiver) {
          if (property === 'watch' && job.deaf) return undefined;
          if (property === 'close') return undefined; // `plain` closes its own nodes
          const value: unknown = Reflect.get(target, property, receiver);
          if (property !== 'acquire' || typeof value !== 'function') return value;
          return (...args: unknown[]) =>
            (value as (...a: unknown[]) => Promise<unknown>).apply(target, args).finally(() => {
              if (++answers % plain.nodes.length === 2) process.stdout.write('asked\n');
            });
        },
      }) as LockNode,
  );
  const slow = job.deaf ? { retryDelay: 400, maxRetryDelay: 400 } : {};
  const redlock = new Redlock(nodes, { logger: false, restartGuard: false, fair: job.fair, ...slow });
  redlock.on('waiting', ({ position }) => process.stdout.write(`place ${position}\n`));
  const lock = await redlock.acquire(job.resource, { wait: 20_000, ttl: 5_000 });
  process.stdout.write('granted\n');
  await lock.release();
  await redlock.quit();
  await plain.quit();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stdout.write(`error ${String(error)}\n`);
    process.exit(1);
  },
);
