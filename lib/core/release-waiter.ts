import type { Clock, Timer } from './clock';
import type { LockNode, ReleaseListener } from './lock-node';

/**
 * The release announcements one acquisition listens to (on every node that offers `watch`), and the sleep
 * between attempts that they cut short. Counts how its sleeps ended, for `Redlock.stats`.
 */
export class ReleaseWaiter {
  /** Set when a release of one of our keys was announced since the flag was last cleared. */
  announced = false;
  /** True on the first check after the subscription became active. */
  justSubscribed = false;
  /** Sleeps cut short by a release announcement. */
  wokenByRelease = 0;
  /** Sleeps that ran their full time. */
  wokenByTimer = 0;
  private state: 'none' | 'active' | 'unavailable' = 'none';
  private unsubscribers: (() => void)[] = [];
  private wake: ReleaseListener | undefined;

  constructor(
    private readonly nodes: readonly LockNode[],
    private readonly clock: Clock,
    private readonly keys: readonly string[],
  ) {}

  /** Subscribes once (on every node that supports it); resolves whether announcements will arrive. */
  async subscribe(): Promise<boolean> {
    if (this.state !== 'none') {
      this.justSubscribed = false;
      return this.state === 'active';
    }
    const listener: ReleaseListener = (event) => {
      // A lost subscriber connection may swallow the announcement we wait for: poll from now on.
      if (event === 'lost') this.state = 'unavailable';
      else this.announced = true;
      this.wake?.(event);
    };
    const results = await Promise.allSettled(
      this.nodes.map((node) => (node.watch ? node.watch(this.keys, listener) : Promise.reject())),
    );
    for (const result of results) if (result.status === 'fulfilled') this.unsubscribers.push(result.value);
    this.state = this.unsubscribers.length > 0 ? 'active' : 'unavailable';
    this.justSubscribed = this.state === 'active';
    return this.state === 'active';
  }

  /**
   * Sleeps `ms`, or less when the signal aborts — and, with `wakeOnRelease`, when a release is announced or
   * announcements are lost.
   */
  sleep(ms: number, signal: AbortSignal | undefined, wakeOnRelease: boolean): Promise<void> {
    return new Promise((resolve) => {
      let timer: Timer | undefined;
      let settled = false;
      const done = (cause: 'released' | 'timer' | 'other') => {
        if (settled) return;
        settled = true;
        this.wake = undefined;
        timer?.cancel();
        signal?.removeEventListener('abort', onAbort);
        if (cause === 'released') this.wokenByRelease++;
        else if (cause === 'timer') this.wokenByTimer++;
        resolve();
      };
      const onAbort = () => done('other');
      this.wake = wakeOnRelease ? (event) => done(event === 'released' ? 'released' : 'other') : undefined;
      timer = this.clock.setTimeout(() => done('timer'), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  close(): void {
    for (const unsubscribe of this.unsubscribers) unsubscribe();
    this.unsubscribers = [];
  }
}
