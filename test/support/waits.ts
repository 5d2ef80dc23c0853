/** A real-time sleep: every call is counted by scripts/count-sleeps.ts, so prefer awaiting what happens. */
export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `condition` every 10 ms until it is true or `timeout` ms passed; returns its last value. For a state
 * that only a node shows (a key gone, a client count): an event or a promise of the thing itself is better.
 */
export async function eventually(
  condition: () => Promise<boolean> | boolean,
  timeout = 5_000,
): Promise<boolean> {
  const end = Date.now() + timeout;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > end) return false;
    await delay(10);
  }
}
