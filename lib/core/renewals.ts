import type { Clock, Timer } from './clock';
import { LockLostError } from './errors';
import type { RenewalOutcome } from './extend-batch';
import type { Lock } from './lock';
import { LOST_BEFORE_RENEWAL } from './messages';

/** Renew once the remaining validity falls to this fraction of the ttl. */
const RENEW_AT = 2 / 3;

/** The shortest time between two extensions, in ms: short ttls must never make the extender spin. */
export const MIN_EXTEND_INTERVAL = 10;

/**
 * How much earlier than its own due time a lock may be renewed so that it joins a batch: a twentieth of its
 * ttl, at most this many ms (a 10 s lock is renewed at most 0.5 s early, a 10 ms lock never early).
 */
const MAX_SLACK = 1_000;

/** At most this many locks are renewed in one batch (one event-loop turn); the rest follow on the next turn. */
const RENEW_CHUNK = 2_000;

/** A place in a {@link DueQueue}: when it is due (monotonic ms) and where it sits in the heap (−1: absent). */
interface Slot {
  at: number;
  index: number;
  readonly entry: Entry;
}

/**
 * Entries ordered by due time (a binary min-heap whose slots know their index, so moving or removing one is
 * O(log n)) and one clock timer armed for the earliest: any number of entries cost one timer.
 */
class DueQueue {
  private readonly heap: Slot[] = [];
  private timer: Timer | undefined;
  private timerAt = Infinity;

  constructor(
    private readonly clock: Clock,
    /** Takes what is due at `now` (via peek/remove); may return an earlier time to be called again. */
    private readonly onDue: (now: number) => number | undefined,
  ) {}

  get size(): number {
    return this.heap.length;
  }

  peek(): Slot | undefined {
    return this.heap[0];
  }

  /** Queues `slot` at `at`, or moves it there. */
  set(slot: Slot, at: number): void {
    const old = slot.at;
    slot.at = at;
    if (slot.index < 0) {
      slot.index = this.heap.length;
      this.heap.push(slot);
      this.up(slot.index);
    } else if (at < old) this.up(slot.index);
    else this.down(slot.index);
    if (at < this.timerAt) this.arm(at);
  }

  remove(slot: Slot): void {
    const i = slot.index;
    if (i < 0) return;
    slot.index = -1;
    const last = this.heap.pop()!;
    if (last !== slot) {
      this.heap[i] = last;
      last.index = i;
      this.up(i);
      this.down(last.index);
    }
    // An empty queue keeps no timer (nothing to keep the process alive for); otherwise an early firing
    // finds nothing due and re-arms.
    if (this.heap.length === 0) this.disarm();
  }

  private arm(at: number): void {
    this.timer?.cancel();
    this.timerAt = at;
    this.timer = this.clock.setTimeout(() => this.fire(), Math.max(0, at - this.clock.now()));
  }

  private disarm(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const again = this.onDue(this.clock.now());
    const top = this.heap[0];
    const next = Math.min(top ? top.at : Infinity, again ?? Infinity);
    if (next < this.timerAt) this.arm(next);
  }

  private up(i: number): void {
    const { heap } = this;
    const slot = heap[i];
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent].at <= slot.at) break;
      heap[i] = heap[parent];
      heap[i].index = i;
      i = parent;
    }
    heap[i] = slot;
    slot.index = i;
  }

  private down(i: number): void {
    const { heap } = this;
    const slot = heap[i];
    const n = heap.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && heap[right].at < heap[left].at ? right : left;
      if (heap[child].at >= slot.at) break;
      heap[i] = heap[child];
      heap[i].index = i;
      i = child;
    }
    heap[i] = slot;
    slot.index = i;
  }
}

/** One auto-extended lock. */
interface Entry {
  readonly lock: Lock;
  readonly minInterval: number;
  readonly slack: number;
  readonly renewal: Slot;
  readonly deadline: Slot;
  stopped: boolean;
  /** The lock's deadline moved earlier (a shorter extend by hand): its deadline timer follows at once. */
  readonly deadlineEarlier: () => void;
}

/**
 * The auto-extension of every lock of one instance (docs/DESIGN.md §4), as a watchdog: one timer for all
 * renewals and one for all deadlines, however many locks are held.
 *
 * - Each lock is due for renewal when two thirds of its ttl are left (never sooner than max(10 ms, ttl/10)
 *   after the last, never later than half the validity left). When the renewal timer fires it renews every
 *   lock due within its slack (ttl/20, at most 1 s) in one batch: one call per node for all of them
 *   (extend-batch.ts, `LockNode.extendMany`), each lock still decided on its own quorum and its validity
 *   counted from the batch's first send.
 * - Each lock keeps its own deadline, exactly: the deadline timer is armed for the earliest deadline of all
 *   locks and fires while renewals are still in flight, so a slow node can never stretch the time during
 *   which work runs unprotected. When it fires, every lock whose validity ran out is declared lost; a lock
 *   whose deadline moved meanwhile is re-queued at its new deadline.
 */
export class Renewals {
  private readonly renewals: DueQueue;
  private readonly deadlines: DueQueue;

  constructor(
    private readonly clock: Clock,
    /** Renews the locks, each to its own ttl, telling `settle` each lock's outcome once, as soon as known. */
    private readonly extendMany: (
      locks: readonly Lock[],
      settle: (index: number, outcome: RenewalOutcome) => void,
    ) => void,
    private readonly onLost: (lock: Lock, error: LockLostError) => void,
  ) {
    this.renewals = new DueQueue(clock, (now) => this.renewDue(now));
    this.deadlines = new DueQueue(clock, (now) => this.expireDue(now));
  }

  /** Renewals that failed so far (too few nodes answered, or the lock was gone): `stats.renewalsFailed`. */
  failed = 0;

  /** How many locks are kept alive (for tests and metrics). */
  get size(): number {
    return this.deadlines.size;
  }

  /** Keeps `lock` alive until the returned function is called (call it before releasing). */
  add(lock: Lock): () => void {
    const entry = {
      lock,
      minInterval: Math.max(MIN_EXTEND_INTERVAL, Math.floor(lock.ttl / 10)),
      slack: Math.min(MAX_SLACK, Math.floor(lock.ttl / 20)),
      stopped: false,
      deadlineEarlier: () => {
        if (!entry.stopped) this.armDeadline(entry);
      },
    } as Entry;
    (entry as { renewal: Slot }).renewal = { at: 0, index: -1, entry };
    (entry as { deadline: Slot }).deadline = { at: 0, index: -1, entry };
    lock.deadlineWatch = entry;
    this.armDeadline(entry);
    this.scheduleRenewal(entry, lock.remainingTime - RENEW_AT * lock.ttl);
    return () => this.stop(entry);
  }

  private stop(entry: Entry): void {
    entry.stopped = true;
    if (entry.lock.deadlineWatch === entry) entry.lock.deadlineWatch = undefined;
    this.renewals.remove(entry.renewal);
    this.deadlines.remove(entry.deadline);
  }

  private lose(entry: Entry, error: LockLostError): void {
    if (entry.stopped) return;
    this.stop(entry);
    if (entry.lock.markLost(error)) this.onLost(entry.lock, error);
  }

  /** The deadline is the lock's own (now at once when it is already lost). */
  private armDeadline(entry: Entry): void {
    const { lock } = entry;
    this.deadlines.set(entry.deadline, lock.lostError ? this.clock.now() : lock.validUntil);
  }

  private scheduleRenewal(entry: Entry, delay: number): void {
    // The floor keeps short ttls from spinning, but never past half the validity left: a lock with a ttl
    // near the 10 ms minimum would otherwise always be lost before its first renewal.
    const due = Math.min(Math.max(entry.minInterval, delay), Math.max(1, entry.lock.remainingTime / 2));
    this.renewals.set(entry.renewal, this.clock.now() + due);
  }

  private renewDue(now: number): number | undefined {
    const batch: Entry[] = [];
    for (;;) {
      const top = this.renewals.peek();
      if (!top || top.at - top.entry.slack > now) break;
      // More due than one batch should hold: the rest on the next turn, after I/O.
      if (batch.length === RENEW_CHUNK) {
        this.renew(batch);
        return now;
      }
      this.renewals.remove(top);
      batch.push(top.entry);
    }
    if (batch.length > 0) this.renew(batch);
    return undefined;
  }

  private renew(batch: readonly Entry[]): void {
    const settled = new Uint8Array(batch.length);
    const settle = (i: number, outcome: RenewalOutcome) => {
      if (settled[i]) return;
      settled[i] = 1;
      this.renewed(batch[i], outcome);
    };
    try {
      this.extendMany(
        batch.map((entry) => entry.lock),
        settle,
      );
    } catch (error) {
      // Never expected; the locks are then retried while their validity lasts, never left unscheduled.
      const cause = error instanceof Error ? error : new Error(String(error));
      for (let i = 0; i < batch.length; i++) settle(i, cause);
    }
  }

  private renewed(entry: Entry, error: RenewalOutcome): void {
    const { lock } = entry;
    if (error === undefined) {
      if (entry.stopped) return;
      this.armDeadline(entry);
      this.scheduleRenewal(entry, lock.remainingTime - RENEW_AT * lock.ttl);
      return;
    }
    // A lock released (or handed back) while its renewal was in flight is no failed renewal.
    if (entry.stopped) return;
    this.failed++;
    if (error instanceof LockLostError) return this.lose(entry, error);
    // Too few nodes answered (or the instance is closing): the lock is unchanged (or ends earlier,
    // docs/DESIGN.md §4); try again while validity lasts — the deadline decides.
    this.armDeadline(entry);
    this.scheduleRenewal(entry, entry.minInterval);
  }

  private expireDue(now: number): undefined {
    for (;;) {
      const top = this.deadlines.peek();
      if (!top || top.at > now) return undefined;
      const { entry } = top;
      const { lock } = entry;
      // Extended meanwhile (by hand, say): wait for the new deadline instead.
      if (!lock.lostError && lock.validUntil > now) this.deadlines.set(top, lock.validUntil);
      else this.lose(entry, new LockLostError(lock.resources, LOST_BEFORE_RENEWAL));
    }
  }
}
