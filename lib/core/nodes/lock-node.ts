/** Called with `'released'` when a watched key was released, `'lost'` when announcements may be missed. */
export type ReleaseListener = (event: 'released' | 'lost') => void;

/** What an acquire request asks of one node. */
export interface AcquireRequest {
  /** The lock keys, one per resource. */
  readonly keys: readonly string[];
  /** With fencing: the fence counter keys, aligned with `keys`; otherwise empty. */
  readonly fenceKeys: readonly string[];
  readonly owner: string;
  readonly ttl: number;
  /** Refuse while the node has been up for less than this many ms (0 = no restart guard). */
  readonly guardWindow: number;
  /** The key where a node records the run_id it was last checked under (see the acquire script). */
  readonly guardKey: string;
  /**
   * Read-write locks (docs/DESIGN.md §15): `'write'` (also excludes readers) or `'read'` (shared with other
   * readers). Undefined, with no `readerKeys`: a plain exclusive lock that ignores readers.
   */
  readonly mode?: 'read' | 'write';
  /** The readers sets of the resources (`<lock key>:readers`), aligned with `keys`. */
  readonly readerKeys?: readonly string[];
  /** The writer-intent keys of the resources (`<lock key>:intent`), aligned with `keys`. */
  readonly intentKeys?: readonly string[];
  /** What a waiting writer writes to the intent keys: the same for every attempt of one acquisition. */
  readonly intent?: string;
  /** How long a writer's intent keeps new readers out unless renewed by its next attempt, in ms. */
  readonly intentTtl?: number;
  /**
   * The `intentTtl` of the attempts after the first, when it differs: a writer that is not fair sets no intent
   * on its first attempt (most are granted; its request then needs no intent keys), from its second on it does.
   */
  readonly laterIntentTtl?: number;
  /**
   * Fair waiting (docs/DESIGN.md §18): per resource its queue (`<lock key>:queue`, tickets by arrival), the
   * tickets' expiries (`:queue:live`) and the turn marker (`:queue:turn`) — all queues, then all expiries, then
   * all turn markers. Undefined: the call is not ordered. The ticket is the `intent` id; a call with
   * `intentTtl` 0 (one that does not wait) checks the queue but takes no ticket.
   */
  readonly queueKeys?: readonly string[];
  /** Fair waiting: how long this acquisition has waited so far, in ms (its ticket's arrival is now − waited). */
  readonly waited?: number;
}

/** What a node answered to an acquire request. */
export type AcquireReply =
  /**
   * Every key is now held by the owner; `token` is the raised fence counter (0 without fencing). `time`: the
   * node's clock (Redis: `TIME`) when it answered, in epoch ms — lets the core see that clock step
   * (docs/DESIGN.md §17); a node that leaves it out is not checked for steps.
   */
  | { readonly outcome: 'acquired'; readonly token: number; readonly time?: number }
  /**
   * Another owner holds a key for `holderTtl` more ms (−1: no expiry, −2: just vanished); `readers`: it is
   * held by readers, the last of whom expires in `holderTtl` ms (a writer's intent now keeps new ones out).
   */
  | {
      readonly outcome: 'busy';
      readonly holderTtl: number;
      readonly readers?: boolean;
      /** Fair waiting: the lock is free, but an earlier waiter's turn runs for `holderTtl` more ms (§18). */
      readonly queued?: boolean;
      /** Fair waiting: this waiter's place in the node's queue, from 1 (the furthest back over the resources). */
      readonly position?: number;
      readonly time?: number;
    }
  /**
   * The node refused: inside the restart-guard window. `uptime`: how long it has been up (precise mode, from
   * INFO) or how long its data has existed (`basis: 'data-age'`, portable mode), in ms.
   */
  | { readonly outcome: 'refused'; readonly uptime: number; readonly basis?: 'uptime' | 'data-age' };

/** One lock of a batched renewal ({@link LockNode.extendMany}): what {@link LockNode.extend} takes. */
export interface ExtendItem {
  /** The lock keys (checked and extended unless `readers` is given). */
  readonly keys: readonly string[];
  readonly owner: string;
  /** The new ttl in ms. */
  readonly ttl: number;
  /** A read lock's readers sets (docs/DESIGN.md §15): the owner's entries there are checked and extended. */
  readonly readers?: readonly string[];
}

/** What {@link LockNode.readPermits} resolves: the recorded limit (as `limit` resolves it) and the free permits. */
export interface PermitsReading {
  /** The recorded number of permits; −1 when the limit key holds something that is not a number. */
  readonly limit: number;
  /**
   * Per permit key, in order: true when the node holds no key there. May be left out when the call named the
   * permit tried next (`next`) and the node holds no key there.
   */
  readonly free?: readonly boolean[];
}

/** One key as a node holds it, read by {@link LockNode.inspect}. */
export type KeyReading =
  | { readonly type: 'none' }
  | { readonly type: 'string'; readonly value: string; readonly pttl: number }
  | {
      readonly type: 'zset';
      readonly pttl: number;
      /** How many members the set has (only the first 100 by score are in `members`). */
      readonly count: number;
      /** Member and score, by score. */
      readonly members: readonly (readonly [string, number])[];
    }
  | { readonly type: 'other'; readonly name: string };

/** What a node holds under some keys, and its clock when it read them. */
export interface NodeReading {
  /** The node's clock (Redis: `TIME`), in epoch ms. */
  readonly time: number;
  /** One reading per key asked for, in the same order. */
  readonly keys: readonly KeyReading[];
}

/** What a revocation asks of one node (docs/DESIGN.md §16). */
export interface RevokeRequest {
  /** The keys to delete whoever holds them: first `lockKeys` lock keys (announced as released), then the rest. */
  readonly keys: readonly string[];
  readonly lockKeys: number;
  /** Where the revocation is announced, and what is published there. */
  readonly channel: string;
  readonly message: string;
}

/**
 * One independent Redis node as the algorithm sees it. The core reaches Redis only through this interface,
 * so a simulation can stand in virtual nodes. Each method applies the guarantees of the matching Lua script
 * in `scripts.ts` atomically on the node, and rejects when the node cannot be asked.
 */
export interface LockNode {
  /** A stable, human-readable name used in messages (for Redis: `host:port`). */
  readonly name: string;
  /**
   * Optional: true when this node runs commands in the order they were sent and answers in that order (one
   * TCP connection). A release sent after an acquire then always undoes it, so an acquire answer that
   * arrives after its lock was released or given up needs no separate undo.
   */
  readonly ordered?: boolean;
  /**
   * @internal True for the library's own Redis adapters, which parse and check every reply themselves (a reply
   * the scripts cannot return is that node's error): the core then does not check their replies a second
   * time. Any other node's replies are checked against this port's contract (`node-contract.ts`).
   */
  readonly repliesChecked?: boolean;
  acquire(request: AcquireRequest): Promise<AcquireReply>;
  /**
   * Raises the fence counters to `token` if the owner still holds every key; resolves whether it did. With
   * `readers` (a read lock), "holds" means: a live entry of `owner` in each of those readers sets.
   */
  fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    owner: string,
    token: number,
    readers?: readonly string[],
  ): Promise<boolean>;
  /** Resolves true when every key (with `readers`: every readers entry) was still `owner`'s and got the new ttl. */
  extend(keys: readonly string[], owner: string, ttl: number, readers?: readonly string[]): Promise<boolean>;
  /**
   * Optional: {@link extend} for many locks in few round trips (batched renewal, docs/DESIGN.md §4). Resolves
   * one answer per item, in order: what `extend` would resolve for it (each item all-or-nothing on this
   * node), or an Error for an item this node could not be asked (a Cluster slot whose primary failed).
   * Rejects when the node could not be asked at all. Without it, the core extends each lock on its own.
   */
  extendMany?(items: readonly ExtendItem[]): Promise<readonly (boolean | Error)[]>;
  /**
   * Resolves the number of keys deleted (only keys held by `owner` are deleted). The core never writes an
   * owner value again once it released it, so this may run on the node after commands sent later.
   */
  release(keys: readonly string[], owner: string, readers?: readonly string[]): Promise<number>;
  /**
   * Optional: deletes each writer-intent key that still holds `intent` (another writer's intent is left alone)
   * and announces each deletion on its lock key's release channel; resolves how many were deleted. With
   * `queueKeys` (fair waiting, as in {@link AcquireRequest}), it also takes the ticket `intent` out of each queue,
   * announced the same way (counted with the intents). Without it,
   * an intent left by a writer that stopped waiting keeps new readers out until it expires (docs/DESIGN.md §15).
   */
  clearIntent?(intentKeys: readonly string[], intent: string, queueKeys?: readonly string[]): Promise<number>;
  /**
   * Optional: records `permits` as the limit of the semaphore whose limit key is `key` when none is recorded
   * (kept at least `ttl` ms), and resolves the recorded one (−1: the key holds something else). Without it a
   * node does not take part in detecting callers that disagree about a limit (docs/DESIGN.md §14).
   */
  limit?(key: string, permits: number, ttl: number): Promise<number>;
  /**
   * Optional: {@link limit}, and in the same call which of `permitKeys` (a semaphore's permits, in order) the
   * node holds no key at (read-only for those). A semaphore reads its free permits with it (docs/DESIGN.md
   * §14); without it the core calls {@link limit} and reads them with {@link inspect}. `next` (optional): the
   * index of the permit the caller tries right after this read; when the node holds no key there it may answer
   * without `free` (the attempt decides; the core reads them all again only if it fails).
   */
  readPermits?(
    key: string,
    permitKeys: readonly string[],
    permits: number,
    ttl: number,
    next?: number,
  ): Promise<PermitsReading>;
  /**
   * Optional: calls `listener('released')` when one of `keys` is released on this node, and
   * `listener('lost')` when announcements may have been missed (connection lost). Resolves an unsubscribe
   * function once the subscription is active, or rejects when it cannot be made (waiters then poll).
   */
  watch?(keys: readonly string[], listener: ReleaseListener): Promise<() => void>;
  /** Optional, for inspection: reads `keys` as they are (read-only), with the node's clock. */
  inspect?(keys: readonly string[]): Promise<NodeReading>;
  /**
   * Optional, for listing locks: up to `limit` keys matching the glob `pattern`, found by scanning (never by
   * `KEYS`: a scan does not block the server), in no particular order.
   */
  scanKeys?(pattern: string, limit: number): Promise<string[]>;
  /** Optional: deletes a resource's keys whoever holds them and announces it; resolves how many were deleted. */
  revoke?(request: RevokeRequest): Promise<number>;
  /**
   * Optional: calls `onMessage` with every message published on `channel` (revocations); resolves the
   * unsubscribe function once subscribed, or rejects when it cannot subscribe.
   */
  subscribeToChannel?(channel: string, onMessage: (message: string) => void): Promise<() => void>;
  /**
   * Optional, for health checks: resolves a lower bound of the node's uptime in ms, or undefined when the
   * node cannot tell (rejects when it cannot be asked).
   */
  probe?(): Promise<number | undefined>;
  /**
   * Optional: resolves once the node can take commands, starting a lazy connection; rejects with the reason
   * when it cannot within `timeout` ms. Nodes without it count as ready.
   */
  connect?(timeout: number): Promise<void>;
  /**
   * Optional: how this node's restart guard decides, once known — `'uptime'` (precise: the server's uptime
   * and run_id, from INFO) or `'data-age'` (portable: a marker key whose absence means the data was lost;
   * used where INFO is denied or incomplete).
   */
  readonly guardMode?: 'uptime' | 'data-age';
  /**
   * Optional: a reason why this node cannot hold a lock on these keys together (e.g. a Redis Cluster whose
   * keys hash to different slots), or undefined. Checked before any traffic; the caller gets an
   * `InvalidArgumentError` with the reason.
   */
  refuseKeys?(keys: readonly string[]): string | undefined;
  /**
   * Optional: what identifies the server behind this node once connected (for Redis its `run_id`), so the
   * same server listed under two names (`0.0.0.0` and `127.0.0.1`, a DNS alias) is recognised.
   */
  readonly serverId?: string;
  /**
   * Optional: lets go of what the node holds for this instance (connections it created, subscribers),
   * within `timeout` ms. Called once, by `Redlock.quit()`.
   */
  close?(timeout: number): Promise<void>;
}

/** A node's connection state, as `Redlock.connect()` reports it. */
export interface ReadyState {
  readonly node: string;
  readonly ready: boolean;
  /** Why it is not ready, when it is not. */
  readonly error?: Error;
  /** How the node's restart guard decides (when the node says). */
  readonly guardMode?: 'uptime' | 'data-age';
}
