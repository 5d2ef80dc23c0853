import type { Clock, Timer } from '../clock';
import { type LockNode, type ReleaseListener, callNode } from '../nodes';

/**
 * The release announcements one acquisition listens to (on every node that offers `watch`), and the sleep
 * between attempts that they cut short. Counts how its sleeps ended, for `Redlock.stats`.
 */
/** A holder ttl this much above the previous answer's (less the time since) means a new holder, in ms. */
const NEW_HOLDER_SLACK = 5;
/**
 * How long after its subscriptions failed or were lost a waiter subscribes again, in ms: a confirmation that
 * came too late on a loaded host, or a subscriber connection back up, is not given up for the whole wait.
 */
const RESUBSCRIBE_AFTER = 1_000;

export class ReleaseWaiter {
  /** Set when a release of one of our keys was announced since the flag was last cleared. */
  announced = false;
  /** True on the first check after the subscription became active. */
  justSubscribed = false;
  /** Sleeps cut short by a release announcement. */
  wokenByRelease = 0;
  /** Sleeps that ran their full time. */
  wokenByTimer = 0;
  /** Announcement-triggered attempts in a row that still failed (a lost race, or announcements that lie). */
  private falseWakes = 0;
  /** The holder's remaining ttl in the last busy answer, and when it came (to tell a new holder). */
  private lastHolderTtl: number | undefined;
  private lastBusyAt = 0;
  /** Until this time (clock ms) an announcement does not cut a sleep short. */
  private quietUntil = 0;
  /** How the last sleep ended. */
  private lastWake: 'released' | 'timer' | 'other' | undefined;
  private state: 'none' | 'active' | 'unavailable' = 'none';
  /** When the state last became `unavailable` (clock ms). */
  private unavailableSince = 0;
  private unsubscribers: (() => void)[] = [];
  private wake: ReleaseListener | undefined;

  constructor(
    private readonly nodes: readonly LockNode[],
    private readonly clock: Clock,
    private readonly keys: readonly string[],
  ) {}

  /** Subscribes once (on every node that supports it); resolves whether announcements will arrive. */
  async subscribe(): Promise<boolean> {
    if (this.state === 'unavailable' && this.clock.now() - this.unavailableSince >= RESUBSCRIBE_AFTER) {
      this.close();
      this.state = 'none';
    }
    if (this.state !== 'none') {
      this.justSubscribed = false;
      return this.state === 'active';
    }
    const listener: ReleaseListener = (event) => {
      // A lost subscriber connection may swallow the announcement we wait for: poll from now on.
      if (event === 'lost') this.becameUnavailable();
      else this.announced = true;
      this.wake?.(event);
    };
    const results = await Promise.allSettled(
      this.nodes.map((node) =>
        node.watch ? callNode(node, 'watch', () => node.watch!(this.keys, listener)) : Promise.reject(),
      ),
    );
    // Only a function counts as a subscription: close() calls it.
    for (const result of results) {
      if (result.status === 'fulfilled' && typeof result.value === 'function')
        this.unsubscribers.push(result.value);
    }
    if (this.unsubscribers.length > 0) this.state = 'active';
    else this.becameUnavailable();
    this.justSubscribed = this.state === 'active';
    return this.state === 'active';
  }

  /** Announcements may be missed from now on: poll, and subscribe again after a while. */
  private becameUnavailable(): void {
    if (this.state !== 'unavailable') this.unavailableSince = this.clock.now();
    this.state = 'unavailable';
  }

  /**
   * Call after each failed attempt. When a release announcement triggered it (it woke the sleep before it,
   * or came while it ran), the next announcement may trigger an attempt only `base` ms later, doubling each
   * time this repeats, up to `maxGap`: a node announcing releases all the time (or releases that others win)
   * cannot drive attempts faster than that. An attempt no announcement triggered resets the gap, and so does
   * one refused for an earlier waiter's turn (`turnOfAnother`, fair waiting): the release was real, the lock
   * went to the head of the queue — and this waiter, head next, must not sleep through its own turn.
   */
  failedAttempt(base: number, maxGap: number, holderTtl?: number, turnOfAnother = false): void {
    const now = this.clock.now();
    // Only an announcement that woke the sleep before this attempt counts: one that came while the attempt ran
    // may well be the release it just missed (the retry right after it is what finds the lock free).
    const triggered = this.lastWake === 'released';
    this.lastWake = undefined;
    // The lock changed hands since the last busy answer (its ttl went up, not down): the announcement was real
    // and another contender won the race — honest contention, not a storm, so no gap.
    const newHolder =
      holderTtl !== undefined &&
      holderTtl >= 0 &&
      this.lastHolderTtl !== undefined &&
      holderTtl > this.lastHolderTtl - (now - this.lastBusyAt) + NEW_HOLDER_SLACK;
    this.lastHolderTtl = holderTtl;
    this.lastBusyAt = now;
    this.falseWakes = triggered && !newHolder && !turnOfAnother ? this.falseWakes + 1 : 0;
    const gap = Math.min(Math.max(base, maxGap), base * 2 ** Math.min(this.falseWakes - 1, 20));
    this.quietUntil = this.falseWakes === 0 ? 0 : this.clock.now() + gap;
  }

  /** How long, in ms, an announcement may not trigger an attempt yet (0: it may now). */
  get quietFor(): number {
    return Math.max(0, this.quietUntil - this.clock.now());
  }

  /**
   * Sleeps `ms`, or less when the signal aborts — and, with `wakeOnRelease`, when a release is announced or
   * announcements are lost.
   */
  sleep(ms: number, signal: AbortSignal | undefined, wakeOnRelease: boolean): Promise<void> {
    return new Promise((resolve) => {
      let timer: Timer | undefined;
      let settled = false;
      const due = this.clock.now() + ms;
      const done = (cause: 'released' | 'timer' | 'other') => {
        if (settled) return;
        settled = true;
        this.lastWake = cause;
        this.wake = undefined;
        timer?.cancel();
        signal?.removeEventListener('abort', onAbort);
        if (cause === 'released') this.wokenByRelease++;
        else if (cause === 'timer') this.wokenByTimer++;
        resolve();
      };
      const onAbort = () => done('other');
      const onRelease = () => {
        const quiet = this.quietFor;
        if (quiet <= 0) return done('released');
        // Too soon after the last announcement-triggered attempt: wake when the quiet period ends instead.
        timer?.cancel();
        timer = this.clock.setTimeout(() => done('released'), Math.min(quiet, due - this.clock.now()));
      };
      this.wake = wakeOnRelease ? (event) => (event === 'released' ? onRelease() : done('other')) : undefined;
      timer = this.clock.setTimeout(() => done('timer'), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  close(): void {
    for (const unsubscribe of this.unsubscribers) {
      try {
        unsubscribe();
      } catch {
        // a custom node's unsubscribe that throws must not end the acquisition
      }
    }
    this.unsubscribers = [];
  }
}
