import type { Clock, Timer } from '../clock';

/**
 * Lets only one acquisition per key set and per process contend for a lock at a time; the others wait
 * their turn here, in arrival order, without any Redis traffic. Without it, every release wakes every
 * waiter of the process, their attempts split the votes, and nobody wins the round: with hundreds of
 * waiters on one key, progress stalls. The process's waiters then behave as one contender, like a local
 * semaphore in front of the distributed lock. Entries are removed when their queue empties, so the map
 * never outgrows the keys currently waited on.
 */
export class LocalQueues {
  private readonly tails = new Map<string, Promise<void>>();
  /** How many tasks each key has, running or queued. */
  private readonly counts = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  /**
   * Runs `task` once every earlier task queued under `key` has finished (or `maxWait` ms passed, or
   * `signal` aborted — the task then runs anyway and decides for itself). Resolves `task`'s result and
   * the time spent queued.
   */
  async run<T>(
    key: string,
    maxWait: number,
    signal: AbortSignal | undefined,
    task: (queuedFor: number) => Promise<T>,
  ): Promise<T> {
    const previous = this.tails.get(key);
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    const tail = previous ? previous.then(() => mine) : mine;
    this.tails.set(key, tail);
    const queuedAt = this.clock.now();
    try {
      if (previous) await this.waitFor(previous, maxWait, signal);
      return await task(this.clock.now() - queuedAt);
    } finally {
      done();
      if (this.tails.get(key) === tail) this.tails.delete(key);
      const left = (this.counts.get(key) ?? 1) - 1;
      if (left > 0) this.counts.set(key, left);
      else this.counts.delete(key);
    }
  }

  /** How many tasks `key` has now, the running one and those queued behind it. */
  waiting(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  /** The number of key sets with queued acquisitions (for tests: it must fall back to 0). */
  get size(): number {
    return this.tails.size;
  }

  private waitFor(previous: Promise<void>, maxWait: number, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      let timer: Timer | undefined;
      const finish = () => {
        timer?.cancel();
        signal?.removeEventListener('abort', finish);
        resolve();
      };
      timer = this.clock.setTimeout(finish, Math.max(0, maxWait));
      signal?.addEventListener('abort', finish, { once: true });
      void previous.then(finish);
    });
  }
}
