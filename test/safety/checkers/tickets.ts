/** A key of fair waiting (or a writer's intent) on a node, as a scan found it. */
export interface QueueKey {
  readonly node: number;
  readonly key: string;
  /** PTTL: ms left; -1 no expiry; -2 gone between the scan and the PTTL. */
  readonly pttl: number;
  /** A queue's or a ticket list's members (ZCARD); undefined for a string key. */
  readonly tickets?: number;
}

/**
 * Nothing left behind (docs/DESIGN.md §18): once every waiter has stopped, a key of the queues (`<lock key>:queue`,
 * `:queue:live`) or a writer's intent (`:intent`) may only still be there expiring within a ticket's ttl, a turn
 * marker (`:queue:turn`, kept twice its turn) within twice that. Returns the keys that break it: no expiry at all,
 * or a longer one than their kind may have.
 */
export function ticketsLeftBehind(keys: readonly QueueKey[], ticketTtl: number): QueueKey[] {
  return keys.filter((key) => {
    const bound = key.key.endsWith(':queue:turn') ? 2 * ticketTtl : ticketTtl;
    return key.pttl === -1 || key.pttl > bound;
  });
}
