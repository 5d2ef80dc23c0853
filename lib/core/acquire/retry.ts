/**
 * The delay before retry number `attempt` (1 = the first retry): `retryDelay × 5^(attempt−1)`, capped at
 * `maxRetryDelay`, then scaled by a random factor in [0.5, 1.5) so that competing waiters spread out
 * instead of retrying in lockstep. `random` returns a number in [0, 1).
 */
export function backoffDelay(
  attempt: number,
  retryDelay: number,
  maxRetryDelay: number,
  random: () => number,
): number {
  const base = Math.min(maxRetryDelay, retryDelay * 5 ** Math.min(attempt - 1, 20));
  return base * (0.5 + random());
}

/**
 * How long to sleep before the next attempt, given the time left in the wait budget: never past the
 * deadline, and when a busy holder's key will expire sooner than the backoff, wake up just after it does.
 * Returns undefined when the budget is used up.
 */
export function nextDelay(
  backoff: number,
  remainingBudget: number,
  holderTtl: number | undefined,
): number | undefined {
  if (remainingBudget <= 0) return undefined;
  let delay = backoff;
  if (holderTtl !== undefined && holderTtl >= 0 && holderTtl + 1 < delay) delay = holderTtl + 1;
  return Math.min(delay, remainingBudget);
}
