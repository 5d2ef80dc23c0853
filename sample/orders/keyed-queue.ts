/**
 * Lets one call per key run at a time in this process; the others wait their turn, in order, and a call
 * whose turn has not come within `wait` ms is refused with `busy()`.
 *
 * Why the sample queues its buyers locally before the distributed lock: 500 buyers of one SKU arriving
 * at once would otherwise be 500 waiters of one Redis key. Every release wakes them all, they all vote at
 * once on every node, split the votes so nobody wins the round, and try again — a storm that on a busy
 * machine ends in timeouts instead of sales. Queued here, each instance has one buyer at the lock, so the
 * lock only has to arbitrate between instances.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, wait: number, fn: () => Promise<T>, busy: () => Error): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    // The next caller waits for the previous one *and* this one, even if this one gives up early.
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    let timer: NodeJS.Timeout | undefined;
    try {
      const turn = await Promise.race([
        previous.then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), wait))),
      ]);
      if (!turn) throw busy();
      return await fn();
    } finally {
      clearTimeout(timer);
      done();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
