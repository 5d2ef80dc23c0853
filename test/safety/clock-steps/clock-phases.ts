import type { ClientPhase } from '../chaos/protocol';

/** The clients' ttls, by client number (mod their count): short and long locks on the same resources. */
export const TTLS = [200, 400, 700, 1_000] as const;
/** The longest ttl: every client's restart guard (and clock-step window) covers it. */
export const MAX_TTL = Math.max(...TTLS);

/**
 * A clock-step run's client behaviour: every client contends for the same two resources with its own ttl
 * (200–1,000 ms), mostly polling hard with `tryAcquire()` (so someone is ready to take a lock the moment a node
 * lets go of it), sometimes waiting with `acquire()`; work of 30–90 % of the ttl, stopped before the validity
 * deadline as a correct client does; every holder writes to the fenced store. The restart guard's window is
 * the longest ttl, for every client. `detectClockSteps` unset: the library's default.
 */
export function clockPhase(
  name: string,
  seed: number,
  client: number,
  detectClockSteps?: boolean,
): ClientPhase {
  const ttl = TTLS[client % TTLS.length];
  return {
    name,
    seed,
    ttl,
    restartGuard: MAX_TTL,
    nodeTimeout: 150,
    unsafeSkipValidityCheck: false,
    resources: [
      ['hot:0', 1],
      ['hot:1', 1],
    ],
    styles: [
      ['poll', 3],
      ['wait', 1],
    ],
    work: [Math.round(ttl * 0.3), Math.round(ttl * 0.9)],
    longWork: [0, 0],
    acquireWait: 2_000,
    pollDelay: [5, 30],
    pause: [0, 20],
    respectDeadline: true,
    margin: 20,
    ...(detectClockSteps === undefined ? {} : { detectClockSteps }),
  };
}
