import type { ClientPhase } from './protocol';

/**
 * The main run: every safety mechanism on. Short ttl with a restart guard of one ttl; two resources all six
 * clients contend for, one per half of the clients, one per client. Three loop styles: `acquire()` with a
 * wait budget, `tryAcquire()` polling, and `using()` with auto-extension over work longer than the ttl.
 */
export function mainPhase(seed: number): ClientPhase {
  const ttl = 1_000;
  return {
    name: 'main',
    seed,
    ttl,
    restartGuard: ttl,
    // Above the default 50 ms: on a shared two-core host the proxies and nodes stall for tens of ms.
    nodeTimeout: 150,
    unsafeSkipValidityCheck: false,
    resources: [
      ['hot:0', 4],
      ['hot:1', 3],
      ['warm:{half}', 2],
      ['solo:{client}', 2],
      ['pool', 2],
    ],
    // Read-write locks and a semaphore under the same faults: a third of the lock iterations read, and
    // `pool` is a semaphore of two permits.
    readShare: 0.35,
    permits: { pool: 2 },
    styles: [
      ['wait', 3],
      ['poll', 2],
      ['using', 1],
    ],
    work: [10, 300],
    longWork: [300, 1_800],
    acquireWait: 1_500,
    pollDelay: [20, 80],
    pause: [0, 50],
    respectDeadline: true,
    margin: 100,
  };
}

/**
 * The main run again, the restart guard in its portable mode: the clients connect as an ACL user that may not
 * run INFO, so each node's guard decides by the data-age marker, as on a managed Redis that denies INFO.
 */
export function portablePhase(seed: number): ClientPhase {
  return { ...mainPhase(seed), name: 'main-portable', portableGuard: true };
}

/** The main run again over a mixed fleet of client kinds (ioredis, node-redis, iovalkey) in one quorum. */
export function mixedPhase(seed: number): ClientPhase {
  return { ...mainPhase(seed), name: 'main-mixed', mixedClients: true };
}

/**
 * Fair waiting (docs/DESIGN.md §18) under faults: every writer waits fairly (even clients by their instance's
 * default, odd ones per call) on two hot resources, so waiters queue behind each other across the six processes;
 * some of them in `using()` with auto-extension. No readers: they are not ordered, and behind a queue of writers
 * that never empties they wait out their whole budget (writer preference, §15), so a client drawing one would sit
 * the short phase out.
 */
export function fairPhase(seed: number): ClientPhase {
  const ttl = 1_000;
  return {
    name: 'fair-waiters',
    seed,
    ttl,
    restartGuard: ttl,
    nodeTimeout: 150,
    unsafeSkipValidityCheck: false,
    fair: true,
    resources: [
      ['hot:0', 3],
      ['hot:1', 1],
    ],
    styles: [
      ['wait', 5],
      ['using', 1],
    ],
    work: [30, 200],
    longWork: [200, 700],
    acquireWait: 4_000,
    pollDelay: [20, 80],
    pause: [0, 30],
    respectDeadline: true,
    margin: 100,
  };
}

/**
 * Negative control 1: the restart guard off, everything else as safe as in the main run. Long sections on
 * two hot resources and clients that poll, so someone is always ready to take a lock the moment a majority
 * lets them.
 */
export function guardOffPhase(seed: number): ClientPhase {
  // Long enough that a restart on a starved host (it has taken seconds) still lands inside the section.
  const ttl = 2_000;
  return {
    name: 'negative-control-restart-guard-off',
    seed,
    ttl,
    restartGuard: false,
    nodeTimeout: 150,
    unsafeSkipValidityCheck: false,
    resources: [
      ['hot:0', 1],
      ['hot:1', 1],
    ],
    styles: [['poll', 1]],
    work: [Math.round(ttl * 0.7), Math.round(ttl * 0.95)],
    longWork: [0, 0],
    acquireWait: 10_000,
    pollDelay: [20, 60],
    pause: [0, 10],
    respectDeadline: true,
    margin: 50,
  };
}

/** One-way latency on every link of the victims in negative control 2, and its ttl. */
export const VALIDITY_CONTROL = { ttl: 400, latency: 120, victims: [0, 1, 2, 3] } as const;

/**
 * Negative control 2: the validity check skipped (`unsafeSkipValidityCheck`). The victims' two round trips
 * (acquire + fencing write-back) take 4 × 120 ms > the 400 ms ttl, but their write-back still lands within
 * it (3 × 120 ms), so the lock is handed out after its keys are gone. Per-node timeout above the ttl, so the
 * slow answers count. Naive clients: they trust the lock they were given, as most callers do. The two fast
 * clients come back at intervals and then poll hard, so the resource is often free for a victim and, once
 * the victim's keys expired, taken at once by a fast client while the victim still works.
 */
export function validityOffPhase(seed: number, client: number): ClientPhase {
  const { ttl, victims } = VALIDITY_CONTROL;
  const victim = (victims as readonly number[]).includes(client);
  return {
    name: 'negative-control-validity-check-off',
    seed,
    ttl,
    restartGuard: false,
    nodeTimeout: 1_500,
    unsafeSkipValidityCheck: true,
    resources: [['hot:0', 1]],
    styles: [['poll', 1]],
    work: victim ? [250, 350] : [100, 200],
    longWork: [0, 0],
    acquireWait: 5_000,
    pollDelay: victim ? [5, 25] : [2, 8],
    pause: victim ? [0, 10] : [400, 800],
    respectDeadline: false,
    margin: 0,
  };
}
