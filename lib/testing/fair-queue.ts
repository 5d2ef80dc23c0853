import type { AcquireRequest } from '../core';
import type { Keyspace, SortedSetEntry, StringEntry } from './keyspace';
import type { PubSub } from './pub-sub';

/** How many dead tickets one call prunes by expiry, and how many dead heads it skips (the script's 32). */
const PRUNE_LIMIT = 32;

/**
 * The model of ACQUIRE's fair waiting (`lib/redis/scripts/fair-queue.ts`, docs/DESIGN.md §18): per resource a
 * queue (ticket → arrival on the node's clock), the tickets' expiries and a turn marker. Each method does what
 * the matching Lua function does, in the same order, so the differential compares them reply by reply.
 */
export class FairQueueModel {
  constructor(
    private readonly keyspace: Keyspace,
    /** The keyspace's clock (expiry), ms. */
    private readonly now: () => number,
  ) {}

  /** Whether `request` is fair (a writer with queue keys and a turn). */
  static isFair(request: AcquireRequest): boolean {
    return request.mode !== 'read' && request.queueKeys !== undefined;
  }

  /** `join_queue`: takes or renews the ticket on every resource (its first arrival kept) when the call waits. */
  join(request: AcquireRequest, ticket: string, nowMs: number): void {
    const ttl = request.intentTtl ?? 0;
    if (!FairQueueModel.isFair(request) || ttl <= 0) return;
    const n = request.keys.length;
    const keys = request.queueKeys!;
    for (let i = 0; i < n; i++) {
      const queue = this.setAt(keys[i]);
      if (!queue.members.has(ticket)) queue.members.set(ticket, nowMs - (request.waited ?? 0));
      const live = this.setAt(keys[n + i]);
      live.members.set(ticket, nowMs + ttl);
      for (const set of [queue, live]) {
        set.writtenAt = this.now();
        if (this.keyspace.pttl(set) < ttl) set.expireAt = this.now() + ttl;
      }
    }
  }

  /**
   * `place_reply`'s place: the ticket's place (the furthest back over the resources, from 1), or undefined when
   * the call takes no ticket.
   */
  place(request: AcquireRequest, ticket: string): number | undefined {
    if (!FairQueueModel.isFair(request) || (request.intentTtl ?? 0) <= 0) return undefined;
    let place = 1;
    for (let i = 0; i < request.keys.length; i++) {
      const queue = this.keyspace.getSet(request.queueKeys![i]);
      const rank = queue ? byScore(queue).findIndex(([member]) => member === ticket) : -1;
      if (rank >= 0) place = Math.max(place, rank + 1);
    }
    return place;
  }

  /** `queued_reply`'s place: joins, then the place. */
  joinedPlace(request: AcquireRequest, ticket: string, nowMs: number): number | undefined {
    this.join(request, ticket, nowMs);
    return this.place(request, ticket);
  }

  /** `earlier_turn`: ms an earlier live ticket's turn still runs on any resource, or undefined. */
  earlierTurn(request: AcquireRequest, ticket: string, nowMs: number): number | undefined {
    const n = request.keys.length;
    const keys = request.queueKeys!;
    let left: number | undefined;
    for (let i = 0; i < n; i++) {
      const head = this.liveHead(keys[i], keys[n + i], nowMs);
      if (head === undefined || head[0] === ticket) continue;
      const marker = keys[2 * n + i];
      const turn = this.readTurn(marker);
      let ends = turn?.ends;
      if (ends === undefined || (turn!.granted && turn!.owner !== head[0])) {
        ends = head[1];
        this.keyspace.set(marker, `${Math.round(ends)}:t:${head[0]}`, 2 * (ends - nowMs));
      }
      if (nowMs < ends) left = Math.max(left ?? 0, ends - nowMs);
    }
    return left;
  }

  /** `leave_queue`: the ticket leaves every queue (a grant); its own running turn is marked granted. */
  leave(request: AcquireRequest, ticket: string, nowMs: number): void {
    const n = request.keys.length;
    const keys = request.queueKeys!;
    for (let i = 0; i < n; i++) {
      this.keyspace.removeMember(keys[i], ticket);
      this.keyspace.removeMember(keys[n + i], ticket);
      const turn = this.readTurn(keys[2 * n + i]);
      if (turn && !turn.granted && turn.owner === ticket && nowMs < turn.ends) {
        // SET with the PTTL it had: the same expiry.
        turn.marker.value = `${Math.round(turn.ends)}:g:${ticket}`;
        turn.marker.writtenAt = this.now();
      }
    }
  }

  /** `read_turn`: the marker's end, whether granted, its ticket; a bare number is nobody's turn. */
  private readTurn(
    key: string,
  ): { ends: number; granted: boolean; owner: string; marker: StringEntry } | undefined {
    const marker = this.keyspace.get(key);
    if (marker === undefined) return undefined;
    const parts = /^(-?\d+):([tg]):([\s\S]*)$/.exec(marker.value);
    if (parts) return { ends: Number(parts[1]), granted: parts[2] === 'g', owner: parts[3], marker };
    return /^-?\d+(\.\d+)?$/.test(marker.value)
      ? { ends: Number(marker.value), granted: false, owner: '', marker }
      : undefined;
  }

  /** CLEAR_INTENT's queue part: the ticket leaves each queue (each removal announced) and its turns end; how many. */
  clear(queueKeys: readonly string[], ticket: string, pubSub: PubSub): number {
    const n = queueKeys.length / 3;
    let cleared = 0;
    for (let i = 0; i < n; i++) {
      this.keyspace.removeMember(queueKeys[n + i], ticket);
      if (this.keyspace.removeMember(queueKeys[i], ticket)) {
        cleared++;
        // The script's `string.sub(queue, 1, -7)`: the queue key less its `:queue`.
        pubSub.announceRelease(queueKeys[i].slice(0, -6));
      }
      // A turn of this ticket ends with it.
      if (this.readTurn(queueKeys[2 * n + i])?.owner === ticket) this.keyspace.delete(queueKeys[2 * n + i]);
    }
    return cleared;
  }

  /** `live_head`: prunes up to 32 expired tickets, then skips dead heads; the oldest live ticket and its expiry. */
  private liveHead(queueKey: string, liveKey: string, nowMs: number): [string, number] | undefined {
    const live = this.keyspace.getSet(liveKey);
    if (live) {
      const dead = byScore(live)
        .filter(([, expiry]) => expiry <= nowMs)
        .slice(0, PRUNE_LIMIT);
      for (const [ticket] of dead) {
        this.keyspace.removeMember(queueKey, ticket);
        this.keyspace.removeMember(liveKey, ticket);
      }
    }
    for (let skip = 0; skip < PRUNE_LIMIT; skip++) {
      const queue = this.keyspace.getSet(queueKey);
      if (!queue) return undefined;
      const head = byScore(queue)[0][0];
      const expiry = this.keyspace.getSet(liveKey)?.members.get(head);
      if (expiry !== undefined && expiry > nowMs) return [head, expiry];
      this.keyspace.removeMember(queueKey, head);
      this.keyspace.removeMember(liveKey, head);
    }
    return undefined;
  }

  /** The sorted set at `key`, created empty (no ttl yet) when absent. */
  private setAt(key: string): SortedSetEntry {
    const existing = this.keyspace.getSet(key);
    if (existing) return existing;
    const set: SortedSetEntry = { members: new Map(), expireAt: Infinity, writtenAt: this.now() };
    this.keyspace.putSet(key, set);
    return set;
  }
}

/** A sorted set's members as Redis orders them: by score, then by member (bytes). */
function byScore(set: SortedSetEntry): [string, number][] {
  return [...set.members].sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0));
}
