import { RedlockCore } from '../../lib/core';
import type { AcquireReply, AcquireRequest, ExtendItem, LockNode, RedlockOptions } from '../../lib';
import { VirtualClock } from './virtual-clock';

/**
 * An in-memory lock node on a {@link VirtualClock}, for the core's timing policy (renewal rounds, deadlines,
 * batches in flight): exclusive keys with an owner and an expiry in virtual time, no readers, no fencing
 * counter. `silent` makes it answer nothing from then on (a paused or unreachable node: the core's node
 * timeout runs on the clock), `down` refuses every call (a killed node); `holdBatches` keeps each batch's answers until `answerBatches()`.
 */
export class MemoryNode implements LockNode {
  private readonly keys = new Map<string, { owner: string; until: number }>();
  silent = false;
  /** Refuses every call at once from then on (a killed node: connection refused). */
  down = false;
  holdBatches = false;
  /** Batches (`extendMany` calls) received so far. */
  batches = 0;
  /** Single-lock `extend` calls received so far. */
  extends = 0;
  /** `acquire` calls received so far. */
  acquires = 0;
  private readonly held: (() => void)[] = [];
  private readonly batchListeners: (() => void)[] = [];

  constructor(
    readonly name: string,
    private readonly clock: VirtualClock,
  ) {}

  private live(key: string): { owner: string; until: number } | undefined {
    const entry = this.keys.get(key);
    if (entry && entry.until > this.clock.now()) return entry;
    this.keys.delete(key);
    return undefined;
  }
  private answer<T>(value: () => T): Promise<T> {
    if (this.down) return Promise.reject(new Error(`${this.name}: connect ECONNREFUSED`));
    return this.silent ? new Promise<T>(() => undefined) : Promise.resolve().then(value);
  }
  private owns(keys: readonly string[], owner: string): boolean {
    return keys.every((key) => this.live(key)?.owner === owner);
  }
  private setTtl(keys: readonly string[], owner: string, ttl: number): void {
    for (const key of keys) this.keys.set(key, { owner, until: this.clock.now() + ttl });
  }

  acquire(request: AcquireRequest): Promise<AcquireReply> {
    this.acquires++;
    return this.answer(() => {
      const other = request.keys.map((key) => this.live(key)).find((e) => e && e.owner !== request.owner);
      // Whole milliseconds, as PTTL answers (timers at fractions of a ttl make the clock fractional).
      if (other) return { outcome: 'busy', holderTtl: Math.ceil(other.until - this.clock.now()) } as const;
      this.setTtl(request.keys, request.owner, request.ttl);
      return { outcome: 'acquired', token: 0 } as const;
    });
  }
  fence(): Promise<boolean> {
    return this.answer(() => true);
  }
  extend(keys: readonly string[], owner: string, ttl: number): Promise<boolean> {
    this.extends++;
    return this.answer(() => this.extendOne({ keys, owner, ttl }));
  }
  private extendOne(item: ExtendItem): boolean {
    if (!this.owns(item.keys, item.owner)) return false;
    this.setTtl(item.keys, item.owner, item.ttl);
    return true;
  }
  extendMany(items: readonly ExtendItem[]): Promise<boolean[]> {
    this.batches++;
    for (const listener of this.batchListeners.splice(0)) listener();
    if (!this.holdBatches) return this.answer(() => items.map((item) => this.extendOne(item)));
    return new Promise((resolve) => this.held.push(() => resolve(items.map((item) => this.extendOne(item)))));
  }
  /** Runs and answers every batch held so far (their ttls apply now, as on a node that ran them late). */
  answerBatches(): void {
    for (const answer of this.held.splice(0)) answer();
  }
  /** Resolves at this node's next batch. */
  nextBatch(): Promise<void> {
    return new Promise((resolve) => this.batchListeners.push(resolve));
  }
  release(keys: readonly string[], owner: string): Promise<number> {
    return this.answer(() => {
      let released = 0;
      for (const key of keys) if (this.live(key)?.owner === owner && this.keys.delete(key)) released++;
      return released;
    });
  }
  async connect(): Promise<void> {}
  async close(): Promise<void> {}

  /** The owner value `key` holds now, or null (what `GET` reads on a Redis node). */
  valueOf(key: string): string | null {
    return this.live(key)?.owner ?? null;
  }
  /** Writes `key` for `owner` with `ttl` ms to live, as another client's `SET ... PX` would. */
  set(key: string, owner: string, ttl: number): void {
    this.setTtl([key], owner, ttl);
  }
  /** Forgets every key (as after `FLUSHALL` or an eviction). */
  flush(): void {
    this.keys.clear();
  }
}

/** A core over three {@link MemoryNode}s on one virtual clock, restart guard and logging off. */
export function virtualCore(options: RedlockOptions = {}): {
  clock: VirtualClock;
  nodes: MemoryNode[];
  redlock: RedlockCore;
} {
  const clock = new VirtualClock();
  const nodes = ['a', 'b', 'c'].map((name) => new MemoryNode(`${name}:1`, clock));
  const redlock = new RedlockCore(nodes, { logger: false, restartGuard: false, ...options }, { clock });
  return { clock, nodes, redlock };
}
