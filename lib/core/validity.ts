/**
 * How long a lock is guaranteed (docs/DESIGN.md §2): the ttl, minus the time since the operation sent its
 * first command, minus an allowance for clock drift between this process and the nodes. Acquire and extend
 * both count from their own start.
 */

/** The clock-drift allowance for a ttl, in ms: `round(ttl × driftFactor) + 2`. */
export function driftOf(ttl: number, driftFactor: number): number {
  return Math.round(ttl * driftFactor) + 2;
}

/** The monotonic time at which the validity of an operation that started at `start` with `ttl` ends. */
export function validUntil(start: number, ttl: number, driftFactor: number): number {
  return start + ttl - driftOf(ttl, driftFactor);
}
