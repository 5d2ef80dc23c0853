import type { AcquireReply, AcquireRequest } from '../../lib/core';
import type { SimContext } from './context';

/** How one simulated Redis server behaves beyond the scripts. */
export interface ServerSpec {
  readonly name: string;
  /** Its wall clock (the `TIME` command) in µs at true time 0. */
  readonly clockOffsetUs: number;
  /** How fast its wall clock runs relative to true time. */
  readonly clockRate: number;
  /** True time at which it last started (negative: long before the schedule). */
  readonly bootTime: number;
  /** `INFO server` reports uptime in whole seconds; 1000 models that, 1 models an exact uptime. */
  readonly uptimeGranularity: number;
  /** Insane clocks (negative control): each restart sets its wall clock back by this many µs. */
  readonly clockStepBackUs: number;
  /**
   * With persistence (an fsync-every-second AOF): a restart reloads the data, minus whatever was written in the
   * last `persistenceLag` ms before the crash. Undefined: restarts come back empty.
   */
  readonly persistenceLag: number | undefined;
}

/** Somebody subscribed to release announcements of some keys, through one connection. */
export interface Subscription {
  active: boolean;
  /** Delivers a pushed message to the subscriber (through the network: it may be late or lost). */
  push(event: 'released' | 'lost'): void;
}

interface Value {
  value: string | number;
  /** True time after which the key no longer exists. */
  expireAt: number;
  /** True time of the last write (for persistence that loses the most recent writes). */
  writtenAt: number;
}

interface Queued {
  readonly connection: number;
  readonly run: () => void;
}

const FENCE_TTL = 3_600_000;

/**
 * One Redis node as the scripts in `lib/core/scripts.ts` see it. Each script method runs atomically (it is
 * synchronous), with key expiry in true time, the restart guard on the node's own uptime, and a wall clock for
 * fence counters. Faults: crash (data — or with persistence its last writes — and subscriptions lost;
 * commands arriving meanwhile fail), restart (uptime from zero), pause (commands wait; on resume they run with the order across connections
 * shuffled, each connection's own order kept, as SIGCONT'd Redis does).
 */
export class VirtualServer {
  up = true;
  paused = false;
  private bootTime: number;
  private clockOffsetUs: number;
  private readonly data = new Map<string, Value>();
  private backlog: Queued[] = [];
  private readonly subscriptions = new Map<string, Set<Subscription>>();

  constructor(
    private readonly context: SimContext,
    readonly spec: ServerSpec,
  ) {
    this.bootTime = spec.bootTime;
    this.clockOffsetUs = spec.clockOffsetUs;
  }

  get name(): string {
    return this.spec.name;
  }

  /** A command arrived from `connection`: run it now, queue it (paused), or report the node down. */
  deliver(connection: number, run: () => void): 'ran' | 'queued' | 'down' {
    if (!this.up) return 'down';
    if (this.paused) {
      this.backlog.push({ connection, run });
      return 'queued';
    }
    run();
    return 'ran';
  }

  crash(): void {
    this.up = false;
    this.paused = false;
    const lag = this.spec.persistenceLag;
    if (lag === undefined) this.data.clear();
    else {
      // The lost writes are dropped (rather than reverted to older values): a lock key of the current holder
      // vanishes, a fence counter falls back to nothing — what the restart guard and server time must cover.
      const horizon = this.context.scheduler.now - lag;
      for (const [key, entry] of this.data) if (entry.writtenAt > horizon) this.data.delete(key);
    }
    this.backlog = [];
    for (const set of this.subscriptions.values()) {
      for (const subscription of set) {
        if (subscription.active) subscription.push('lost');
        subscription.active = false;
      }
    }
    this.subscriptions.clear();
  }

  restart(): void {
    this.up = true;
    this.bootTime = this.context.scheduler.now;
    this.clockOffsetUs -= this.spec.clockStepBackUs;
  }

  pause(): void {
    if (this.up) this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    const queues = new Map<number, Queued[]>();
    for (const item of this.backlog) {
      const queue = queues.get(item.connection);
      if (queue) queue.push(item);
      else queues.set(item.connection, [item]);
    }
    this.backlog = [];
    const lists = [...queues.values()];
    while (lists.length > 0) {
      const index = Math.floor(this.context.rng.next() * lists.length);
      const item = lists[index].shift() as Queued;
      if (lists[index].length === 0) lists.splice(index, 1);
      item.run();
    }
  }

  /** ACQUIRE: restart guard, all-or-nothing, own keys count as free, fence counters raised. */
  acquire(request: AcquireRequest): AcquireReply {
    if (request.guardWindow > 0) {
      const uptime = this.uptime();
      if (uptime < request.guardWindow) return { outcome: 'refused', uptime };
    }
    for (const key of request.keys) {
      const holder = this.get(key);
      if (holder !== undefined && holder.value !== request.owner) {
        return { outcome: 'busy', holderTtl: this.pttl(holder) };
      }
    }
    const now = this.context.scheduler.now;
    for (const key of request.keys) {
      this.data.set(key, { value: request.owner, expireAt: now + request.ttl, writtenAt: now });
    }
    let token = 0;
    if (request.fenceKeys.length > 0) {
      const micros = this.micros();
      for (const key of request.fenceKeys) {
        const counter = Math.max(Number(this.get(key)?.value ?? 0) + 1, micros);
        this.data.set(key, { value: counter, expireAt: now + FENCE_TTL, writtenAt: now });
        token = Math.max(token, counter);
      }
    }
    return { outcome: 'acquired', token };
  }

  /** FENCE: only while the owner holds every key, raise each counter to at least the token. */
  fence(keys: readonly string[], fenceKeys: readonly string[], owner: string, token: number): boolean {
    if (!this.holdsAll(keys, owner)) return false;
    const now = this.context.scheduler.now;
    for (const key of fenceKeys) {
      if (Number(this.get(key)?.value ?? 0) < token)
        this.data.set(key, { value: token, expireAt: now + FENCE_TTL, writtenAt: now });
    }
    return true;
  }

  /** EXTEND: all-or-nothing, owner-checked, new ttl from now. */
  extend(keys: readonly string[], owner: string, ttl: number): boolean {
    if (!this.holdsAll(keys, owner)) return false;
    const now = this.context.scheduler.now;
    for (const key of keys) {
      const entry = this.data.get(key) as Value;
      entry.expireAt = now + ttl;
      entry.writtenAt = now;
    }
    return true;
  }

  /** RELEASE: compare-and-delete per key, announcing each deletion. */
  release(keys: readonly string[], owner: string): number {
    let deleted = 0;
    for (const key of keys) {
      if (this.get(key)?.value !== owner) continue;
      this.data.delete(key);
      deleted++;
      const set = this.subscriptions.get(key);
      if (set) for (const subscription of set) if (subscription.active) subscription.push('released');
    }
    return deleted;
  }

  /** SUBSCRIBE to the release announcements of `keys`; returns the unsubscribe function. */
  subscribe(keys: readonly string[], subscription: Subscription): () => void {
    for (const key of keys) {
      let set = this.subscriptions.get(key);
      if (!set) this.subscriptions.set(key, (set = new Set()));
      set.add(subscription);
    }
    return () => {
      subscription.active = false;
      for (const key of keys) this.subscriptions.get(key)?.delete(subscription);
    };
  }

  /** The value of `key` (lazy expiry, as Redis: a key lives until true time passes its expiry). */
  peek(key: string): string | number | undefined {
    return this.get(key)?.value;
  }

  private get(key: string): Value | undefined {
    const entry = this.data.get(key);
    if (entry === undefined) return undefined;
    if (this.context.scheduler.now > entry.expireAt) {
      this.data.delete(key);
      return undefined;
    }
    return entry;
  }

  private holdsAll(keys: readonly string[], owner: string): boolean {
    for (const key of keys) if (this.get(key)?.value !== owner) return false;
    return true;
  }

  private pttl(entry: Value): number {
    return Math.max(0, Math.round(entry.expireAt - this.context.scheduler.now));
  }

  private uptime(): number {
    const exact = this.context.scheduler.now - this.bootTime;
    const unit = this.spec.uptimeGranularity;
    return Math.floor(exact / unit) * unit;
  }

  private micros(): number {
    return Math.floor(this.clockOffsetUs + this.spec.clockRate * this.context.scheduler.now * 1000);
  }
}
