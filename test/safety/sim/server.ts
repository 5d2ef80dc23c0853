import type { SimContext } from './context';
import type { AcquireReply, AcquireRequest } from '../../../lib/core';
import { type GuardArgs, ScriptModel } from '../../../lib/testing';

export type { GuardArgs };

/** The `endless-turn` control's turn end (ms on the node's clock) and marker ttl: beyond any schedule. */
const ENDLESS = 1e15;
export type { Subscription } from '../../../lib/testing';

/**
 * The simulation's Redis server: the shipped model of the scripts (`lib/testing`, the one the in-memory nodes
 * run, checked against real Redis by `model-vs-redis.spec.ts`) with the simulation's knobs layered on — a
 * wall clock with its own offset and rate (stepped back on restart for the insane-clocks control, stepped
 * either way while running, keys' expiry following those steps), persistence that loses the last writes of a
 * crash, and the negative controls' planted deviations.
 */

/** What a server needs from its surroundings: the true time (ms) and, for shuffling a paused backlog, a PRNG. */
export interface ServerEnvironment {
  readonly scheduler: { readonly now: number };
  readonly rng: Pick<SimContext['rng'], 'next'>;
}

/** How one simulated Redis server behaves beyond the scripts. */
export interface ServerSpec {
  readonly name: string;
  /** Its wall clock (the `TIME` command) in µs at true time 0. */
  readonly clockOffsetUs: number;
  /** How fast its wall clock runs relative to true time. */
  readonly clockRate: number;
  /** True time at which it last started (negative: long before the schedule). */
  readonly bootTime: number;
  /**
   * How `INFO server` counts `uptime_in_seconds`: 1000 as Redis does (whole wall-clock seconds now minus whole
   * seconds at start, up to a second more than the real uptime), 1 as an honest floor of the exact uptime.
   */
  readonly uptimeGranularity: number;
  /**
   * Whether the acquire script can read `INFO` here (precise guard mode). False: denied (ACL, managed service),
   * so the client sends "INFO not readable" and the script runs the portable mode (the data-age marker).
   */
  readonly infoReadable: boolean;
  /**
   * Negative controls only — the guard clears early: `'uptime-over-reported'` takes INFO's whole-second uptime
   * as is (no second taken off: the bug the chaos suite found); `'data-age-head-start'` counts a lost marker's
   * age from 90 % of a window before the acquire that found it missing (counting from the server's start
   * instead is still safe: the window covers every lock written before the crash);
   * `'foreign-markers-overwritten'` treats a marker holding another application's data as no marker (what
   * the scripts did before they named it). Undefined: the scripts as shipped.
   */
  readonly guardMutation?: 'uptime-over-reported' | 'data-age-head-start' | 'foreign-markers-overwritten';
  /** Insane clocks (negative control): each restart sets its wall clock back by this many µs. */
  readonly clockStepBackUs: number;
  /**
   * Negative controls only — read-write locks broken on this node: `'ignore-writer'` grants a reader while a
   * writer holds the lock; `'client-clock'` stores a reader's expiry as a client whose clock runs a ttl ahead
   * would compute it (the entry lapses at once on the node's clock). Undefined: the scripts as shipped.
   */
  readonly readMutation?: 'ignore-writer' | 'client-clock';
  /**
   * Negative control only — fair waiting broken on this node: `'endless-turn'` orders tickets its own way
   * (arrivals moved by up to 20 ms, by node and ticket) and never ends a turn: only its oldest live ticket is
   * ever granted here (strict order, no fallback to the race when nodes disagree on the head), a grant here
   * keeping the ticket in its place.
   */
  readonly fairMutation?: 'endless-turn';
  /**
   * With persistence (an fsync-every-second AOF): a restart reloads the data, minus whatever was written in the
   * last `persistenceLag` ms before the crash. Undefined: restarts come back empty.
   */
  readonly persistenceLag: number | undefined;
}

/**
 * The server's wall clock: offset and rate against true time (`TIME`), the offset stepped back on restarts
 * (the insane-clocks control), and the steps of a running node's clock (`stepMs`), which move both `TIME` and
 * the clock keys expire by: Redis expires a key when its wall clock passes the key's absolute expiry, so a
 * forward step of S ends every key S early and a backward step lengthens them by as much. Apart from steps,
 * keys expire in true time: the skew is a constant offset (it cancels out of "now + ttl"), and the rate
 * (1 ± 10⁻⁴) is folded into the client's drift, which stands for the drift between client and node.
 */
class SkewedClock {
  /** Sum of the steps of this running node's clock so far, in ms (positive: forward). */
  stepMs = 0;

  constructor(
    private readonly context: ServerEnvironment,
    public offsetUs: number,
    private readonly rate: number,
  ) {}
  now(): number {
    return this.context.scheduler.now + this.stepMs;
  }
  wallMicros(): number {
    return this.wallUsAt(this.context.scheduler.now);
  }
  wallUsAt(time: number): number {
    return Math.floor(this.offsetUs + this.rate * time * 1000 + this.stepMs * 1000);
  }
}

/**
 * One simulated Redis node: {@link ScriptModel} on a skewed wall clock, with persistence, the simulation's
 * negative controls, and redis-semaphore's per-node count (itself a negative control).
 */
export class VirtualServer extends ScriptModel {
  /** The per-node count of the semaphore control (`countAcquire`). */
  private readonly counted = new Map<string, Map<string, number>>();
  private readonly skewed: SkewedClock;

  constructor(
    private readonly context: ServerEnvironment,
    override readonly spec: ServerSpec,
  ) {
    const clock = new SkewedClock(context, spec.clockOffsetUs, spec.clockRate);
    super(clock, spec, clock.wallUsAt(spec.bootTime), () => context.rng.next());
    this.skewed = clock;
  }

  /** Crashes: with persistence, the writes of the last `persistenceLag` ms are lost, else every key. */
  override crash(): void {
    const lag = this.spec.persistenceLag;
    // The lost writes are dropped (rather than reverted to older values): a lock key of the current holder
    // vanishes, a fence counter falls back to nothing — what the restart guard and server time must cover.
    // Writes are stamped on the expiry clock (`now()`, steps included), so a step between a write and the
    // crash shifts what is lost by the step: a lag like any other.
    super.crash(lag === undefined ? -Infinity : this.skewed.now() - lag);
  }

  /**
   * Steps this running node's wall clock by `ms` (positive: forward), as an NTP step, a resumed VM or
   * `date -s` would: `TIME` moves by `ms` at once, and so does every key's remaining life (forward: shorter).
   */
  stepClock(ms: number): void {
    this.skewed.stepMs += ms;
  }

  /** Starts again (after crash()): uptime from now, a new run_id; `bootWallUs` overrides the start time. */
  override restart(bootWallUs?: number): void {
    this.skewed.offsetUs -= this.spec.clockStepBackUs;
    super.restart(bootWallUs);
  }

  /**
   * NEGATIVE CONTROL ONLY — redis-semaphore's per-node count (its acquire script): drop holders whose time is
   * up, then admit `owner` when fewer than `limit` hold `key` here. Accepted on a majority, each node enforces
   * the limit alone. Expiry in true time (the script scores by the client's clock; the control needs no more).
   */
  countAcquire(key: string, limit: number, owner: string, ttl: number): boolean {
    const now = this.context.scheduler.now;
    const holders = this.counted.get(key) ?? new Map<string, number>();
    for (const [holder, until] of holders) if (until <= now) holders.delete(holder);
    this.counted.set(key, holders);
    if (holders.size >= limit && !holders.has(owner)) return false;
    holders.set(owner, now + ttl);
    return true;
  }

  /** NEGATIVE CONTROL ONLY: the per-node count's release (ZREM). */
  countRelease(key: string, owner: string): number {
    return this.counted.get(key)?.delete(owner) ? 1 : 0;
  }

  override acquire(given: AcquireRequest, guard?: GuardArgs): AcquireReply {
    const queueKeys = given.queueKeys;
    const mutated = this.spec.fairMutation === 'endless-turn' && queueKeys !== undefined;
    // The control: this node's own order (each ticket's arrival moved by up to 20 ms, a hash of node and
    // ticket: nodes disagree about calls that came within 20 ms of each other), and every turn marker the call
    // touched standing for ever, a grant here included (it DELs it): only this node's oldest live ticket is
    // ever granted here — no fallback to the race.
    const ticket = given.intent ?? given.owner;
    const request = mutated
      ? { ...given, waited: (given.waited ?? 0) + (hash(`${this.spec.name}/${ticket}`) % 20) }
      : given;
    if (!mutated) return super.acquire(request, guard);
    // ... and a grant here keeps the ticket in its place (it leaves with CLEAR_INTENT or its expiry only): a
    // head granted here but refused elsewhere stays this node's head.
    const n = request.keys.length;
    const kept = queueKeys
      .slice(0, 2 * n)
      .map((key) => [key, this.keyspace.getSet(key)?.members.get(ticket)] as const);
    const reply = super.acquire(request, guard);
    for (const [key, score] of kept) {
      if (score === undefined || reply.outcome !== 'acquired') continue;
      const set = this.keyspace.getSet(key) ?? {
        members: new Map(),
        expireAt: Infinity,
        writtenAt: this.skewed.now(),
      };
      set.members.set(ticket, score);
      this.keyspace.putSet(key, set);
    }
    for (const marker of queueKeys.slice(2 * n)) this.keyspace.set(marker, String(ENDLESS), ENDLESS);
    return reply;
  }

  protected override writerKeepsReadersOut(): boolean {
    return this.spec.readMutation !== 'ignore-writer';
  }

  protected override readerExpiry(nowMs: number, ttl: number): number {
    // The control's client-side expiry: "now + ttl" on a clock a ttl behind the node's.
    return this.spec.readMutation === 'client-clock' ? nowMs : super.readerExpiry(nowMs, ttl);
  }

  protected override uptimeOf(reportedSeconds: number): number {
    if (this.spec.guardMutation === 'uptime-over-reported') return reportedSeconds * 1000;
    return super.uptimeOf(reportedSeconds);
  }

  protected override firstSeenAt(now: number, window: number): number {
    if (this.spec.guardMutation === 'data-age-head-start') return now - Math.floor(window * 0.9);
    return super.firstSeenAt(now, window);
  }

  protected override get overwritesForeign(): boolean {
    return this.spec.guardMutation === 'foreign-markers-overwritten';
  }
}

/** FNV-1a of a string: a stable per-node, per-ticket number for the `endless-turn` control. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
