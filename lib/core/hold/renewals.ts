import type { Clock, Timer } from '../clock';
import { LockLostError } from '../errors';
import type { RenewalOutcome } from './extend-batch';
import type { Lock } from '../lock';
import { lostBeforeRenewal } from '../messages';

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

/**
 * Entries ordered by one of their two due times (a binary min-heap whose entries know their index, so moving or
 * removing one is O(log n)) and one clock timer armed for the earliest: any number of entries cost one timer.
 * The renewal queue orders entries by `renewAt` (index `renewIndex`), the deadline queue by `deadlineAt`
 * (`deadlineIndex`): each lock is one {@link Entry} in both, with no object of its own per queue.
 */
class DueQueue {
  private readonly heap: Entry[] = [];
  private timer: Timer | undefined;
  private timerAt = Infinity;
  /** False once its instance closed: its timer then no longer keeps the process running. */
  private keepsAlive = true;

  constructor(
    private readonly clock: Clock,
    /** True: ordered by deadline; false: by renewal time. */
    private readonly byDeadline: boolean,
    /** Takes what is due at `now` (via peek/remove); may return an earlier time to be called again. */
    private readonly onDue: (now: number) => number | undefined,
  ) {}

  get size(): number {
    return this.heap.length;
  }

  peek(): Entry | undefined {
    return this.heap[0];
  }

  /** When `entry` is due in this queue (meaningless while it is absent). */
  at(entry: Entry): number {
    return this.byDeadline ? entry.deadlineAt : entry.renewAt;
  }

  has(entry: Entry): boolean {
    return this.indexOf(entry) >= 0;
  }

  private indexOf(entry: Entry): number {
    return this.byDeadline ? entry.deadlineIndex : entry.renewIndex;
  }

  private place(entry: Entry, i: number): void {
    this.heap[i] = entry;
    if (this.byDeadline) entry.deadlineIndex = i;
    else entry.renewIndex = i;
  }

  /** Queues `entry` at `at`, or moves it there. */
  set(entry: Entry, at: number): void {
    const old = this.at(entry);
    if (this.byDeadline) entry.deadlineAt = at;
    else entry.renewAt = at;
    const i = this.indexOf(entry);
    if (i < 0) {
      this.heap.push(entry);
      this.up(this.heap.length - 1, entry);
    } else if (at < old) this.up(i, entry);
    else this.down(i, entry);
    if (at < this.timerAt) this.arm(at);
  }

  remove(entry: Entry): void {
    const i = this.indexOf(entry);
    if (i < 0) return;
    if (this.byDeadline) entry.deadlineIndex = -1;
    else entry.renewIndex = -1;
    const last = this.heap.pop()!;
    if (last !== entry) {
      this.place(last, i);
      this.up(i, last);
      this.down(this.indexOf(last), last);
    }
    // An empty queue keeps no timer (nothing to keep the process alive for); otherwise an early firing
    // finds nothing due and re-arms.
    if (this.heap.length === 0) this.disarm();
  }

  private arm(at: number): void {
    this.timer?.cancel();
    this.timerAt = at;
    this.timer = this.clock.setTimeout(
      () => this.fire(),
      Math.max(0, at - this.clock.now()),
      this.keepsAlive,
    );
  }

  /** From now on its timer does not keep the process running (re-armed so at once). */
  detach(): void {
    this.keepsAlive = false;
    if (this.timer) this.arm(this.timerAt);
  }

  private disarm(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    let again: number | undefined;
    try {
      again = this.onDue(this.clock.now());
    } finally {
      // Re-armed even when a callback threw (a user's logger): a deadline timer must never stop.
      const top = this.heap[0];
      const next = Math.min(top ? this.at(top) : Infinity, again ?? Infinity);
      if (next < this.timerAt) this.arm(next);
    }
  }

  /** Moves `entry` (logically at index `i`) up to its place. */
  private up(i: number, entry: Entry): void {
    const { heap } = this;
    const at = this.at(entry);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.at(heap[parent]) <= at) break;
      this.place(heap[parent], i);
      i = parent;
    }
    this.place(entry, i);
  }

  /** Moves `entry` (logically at index `i`) down to its place. */
  private down(i: number, entry: Entry): void {
    const { heap } = this;
    const at = this.at(entry);
    const n = heap.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.at(heap[right]) < this.at(heap[left]) ? right : left;
      if (this.at(heap[child]) >= at) break;
      this.place(heap[child], i);
      i = child;
    }
    this.place(entry, i);
  }
}

/**
 * One auto-extended lock: its places in the renewal and the deadline queues, and the lock's deadline watch
 * (told when its deadline moves earlier). One object per held lock, no closures.
 */
class Entry {
  renewAt = 0;
  renewIndex = -1;
  /** Never later than the lock's deadline while it is queued (it may be earlier: see Renewals). */
  deadlineAt = 0;
  deadlineIndex = -1;
  stopped = false;
  /** How many `add()` calls keep this lock alive (keepAlive twice on one lock shares one entry). */
  holds = 1;
  /** A renewal succeeded at least once (a lock lost before its first one may have too short a ttl). */
  renewed = false;

  constructor(
    private readonly owner: Renewals,
    readonly lock: Lock,
    readonly minInterval: number,
    readonly slack: number,
  ) {}

  /** Whether `renewals` keeps this entry (and it still runs). */
  keptBy(renewals: Renewals): boolean {
    return this.owner === renewals && !this.stopped;
  }

  /** The lock's deadline moved earlier (a shorter extend by hand): its deadline timer follows at once. */
  deadlineEarlier(): void {
    if (!this.stopped) this.owner.deadlineMoved(this);
  }
}

/**
 * The auto-extension of every lock of one instance (docs/DESIGN.md §4), as a watchdog: one timer for all
 * renewals and one for all deadlines, however many locks are held.
 *
 * - Each lock is due for renewal when two thirds of its ttl are left (never sooner than max(10 ms, ttl/10)
 *   after the last, never later than half the validity left). When the renewal timer fires it renews every
 *   lock due within its slack (ttl/20, at most 1 s) in batches of at most {@link RENEW_CHUNK} locks, one batch
 *   per event-loop turn: one call per node for all of them (extend-batch.ts, `LockNode.extendMany`), each lock
 *   still decided on its own quorum and its validity counted from the batch's first send.
 * - Each lock keeps its own deadline, exactly: the deadline timer is armed for the earliest deadline of all
 *   locks and fires while renewals are still in flight, so a slow node can never stretch the time during
 *   which work runs unprotected. When it fires, every lock whose validity ran out is declared lost; a lock
 *   whose deadline moved meanwhile is re-queued at its new deadline. A successful renewal only moves a
 *   deadline later, so it leaves the lock where it is queued (at its older, earlier deadline: the timer fires
 *   then, finds the lock renewed and re-queues it at its deadline of that moment), which costs one queue move
 *   per ttl instead of one per renewal; a deadline moved earlier (a shorter extend by hand, or a failed
 *   extend that shortened it) is re-queued at once. A lock is thus never queued later than its deadline.
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
    this.renewals = new DueQueue(clock, false, (now) => this.renewDue(now));
    this.deadlines = new DueQueue(clock, true, (now) => this.expireDue(now));
  }

  /** Renewals that failed so far (too few nodes answered, or the lock was gone): `stats.renewalsFailed`. */
  failed = 0;

  /** How many locks are kept alive (for tests and metrics). */
  get size(): number {
    return this.deadlines.size;
  }

  /** Set by {@link close}: nothing is renewed any more. */
  private closed = false;

  /**
   * Ends the renewals (the instance's `quit()`: nothing could extend a lock any more). A lock still kept
   * alive stays valid until its deadline, and its holder is still told then (signal, onLockLost), but that
   * deadline timer no longer keeps the process running.
   */
  close(): void {
    this.closed = true;
    for (let top = this.renewals.peek(); top; top = this.renewals.peek()) this.renewals.remove(top);
    this.deadlines.detach();
  }

  /** Keeps `lock` alive until the returned function is called (call it before releasing). */
  add(lock: Lock): () => void {
    // Kept alive already (keepAlive twice, or inside using()): one entry, stopped when its last keeper stops.
    const kept = lock.deadlineWatch;
    if (kept instanceof Entry && kept.keptBy(this)) {
      kept.holds++;
      return this.releaser(kept);
    }
    const entry = new Entry(
      this,
      lock,
      Math.max(MIN_EXTEND_INTERVAL, Math.floor(lock.ttl / 10)),
      Math.min(MAX_SLACK, Math.floor(lock.ttl / 20)),
    );
    lock.deadlineWatch = entry;
    const now = this.clock.now();
    this.armDeadline(entry, now);
    this.scheduleRenewal(entry, now, lock.remainingTime - RENEW_AT * lock.ttl);
    return this.releaser(entry);
  }

  /** The stop function of one keeper of `entry` (idempotent); the entry stops with its last keeper. */
  private releaser(entry: Entry): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--entry.holds === 0) this.stop(entry);
    };
  }

  /** @internal `entry`'s lock has an earlier deadline (Entry.deadlineEarlier). */
  deadlineMoved(entry: Entry): void {
    this.armDeadline(entry, this.clock.now());
  }

  private stop(entry: Entry): void {
    entry.stopped = true;
    if (entry.lock.deadlineWatch === entry) entry.lock.deadlineWatch = undefined;
    this.renewals.remove(entry);
    this.deadlines.remove(entry);
  }

  private lose(entry: Entry, error: LockLostError): void {
    if (entry.stopped) return;
    this.stop(entry);
    if (!entry.lock.markLost(error)) return;
    try {
      this.onLost(entry.lock, error);
    } catch {
      // A logger or listener that throws must not stop the watchdog (the loss itself is recorded).
    }
  }

  /** The deadline is the lock's own (now at once when it is already lost). */
  private armDeadline(entry: Entry, now: number): void {
    const { lock } = entry;
    this.deadlines.set(entry, lock.lostError ? now : lock.validUntil);
  }

  private scheduleRenewal(entry: Entry, now: number, delay: number): void {
    if (this.closed) return;
    // The floor keeps short ttls from spinning, but never past half the validity left: a lock with a ttl
    // near the 10 ms minimum would otherwise always be lost before its first renewal.
    const { lock } = entry;
    const remaining = lock.lostError ? 0 : lock.validUntil - now;
    const due = Math.min(Math.max(entry.minInterval, delay), Math.max(1, remaining / 2));
    this.renewals.set(entry, now + due);
  }

  private renewDue(now: number): number | undefined {
    const batch: Entry[] = [];
    for (;;) {
      const top = this.renewals.peek();
      if (!top || top.renewAt - top.slack > now) break;
      // More due than one batch should hold: the rest on the next turn, after I/O.
      if (batch.length === RENEW_CHUNK) {
        this.renew(batch);
        return now;
      }
      this.renewals.remove(top);
      batch.push(top);
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
    const locks = new Array<Lock>(batch.length);
    for (let i = 0; i < batch.length; i++) locks[i] = batch[i].lock;
    try {
      this.extendMany(locks, settle);
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
      entry.renewed = true;
      const now = this.clock.now();
      // Renewed: the deadline only moved later (an earlier one was re-queued when it moved), so the lock
      // stays queued at its older deadline, which the deadline timer re-queues when it gets there.
      if (!this.deadlines.has(entry)) this.armDeadline(entry, now);
      this.scheduleRenewal(entry, now, lock.validUntil - now - RENEW_AT * lock.ttl);
      return;
    }
    // A lock released (or handed back) while its renewal was in flight is no failed renewal.
    if (entry.stopped) return;
    this.failed++;
    if (error instanceof LockLostError) return this.lose(entry, error);
    // Too few nodes answered (or the instance is closing): the lock is unchanged (or ends earlier,
    // docs/DESIGN.md §4); try again while validity lasts — the deadline decides.
    const now = this.clock.now();
    this.armDeadline(entry, now);
    this.scheduleRenewal(entry, now, entry.minInterval);
  }

  private expireDue(now: number): undefined {
    for (;;) {
      const top = this.deadlines.peek();
      if (!top || top.deadlineAt > now) return undefined;
      const { lock } = top;
      // Renewed or extended meanwhile: wait for the new deadline instead.
      if (!lock.lostError && lock.validUntil > now) this.deadlines.set(top, lock.validUntil);
      else this.lose(top, new LockLostError(lock.resources, lostBeforeRenewal(lock.ttl, top.renewed)));
    }
  }
}
