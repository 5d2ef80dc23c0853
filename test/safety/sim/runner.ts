import { performance } from 'node:perf_hooks';
import type { Profile } from './config';
import { ARRIVAL_RESOLUTION, BYPASS_BOUND, FAIR_PROFILES } from './fair-config';
import { World, WorldResult } from './world';

/** Totals over a run of many schedules. */
export interface RunSummary {
  readonly profile: Profile;
  readonly baseSeed: number;
  schedules: number;
  events: number;
  operations: number;
  granted: number;
  busy: number;
  unavailable: number;
  lost: number;
  aborted: number;
  extended: number;
  /** Short extensions that missed their quorum (the short-extend scenario). */
  shortExtendFailed: number;
  /** Read locks granted (read-write locks). */
  readsGranted: number;
  /** Permits of a semaphore granted. */
  permitsGranted: number;
  messages: number;
  lostMessages: number;
  faults: number;
  /** Node refusals inside the restart-guard window: precise mode (uptime), portable mode (data age). */
  refusedUptime: number;
  refusedDataAge: number;
  /** Requests a node ran after ones sent later on the same connection (the reordering fault). */
  reordered: number;
  /** Steps of running nodes' clocks injected; `clock-step` events the instances emitted. */
  clockSteps: number;
  stepsSeen: number;
  overlaps: number;
  staleTokens: number;
  /** Overlaps the clock-step detection cannot prevent (no earlier sample of the stepped node), apart. */
  uncoveredOverlaps: number;
  uncoveredSchedules: number;
  /** The first schedules with uncovered overlaps (seed + descriptions). */
  readonly uncoveredExamples: WorldResult[];
  /** Stale writes (interleaving without fencing), those a fenced register accepted, writes it rejected. */
  staleWrites: number;
  staleWritesAccepted: number;
  writesRejected: number;
  anomalies: number;
  /** Fair waiting (docs/DESIGN.md §18): schedules whose clients waited fairly, their fair operations, granted. */
  fairSchedules: number;
  fairOps: number;
  fairGranted: number;
  /** Fair attempts granted by a node and refused by another for an earlier waiter's turn. */
  turnSplits: number;
  /** The fair profiles' checkers: calls recorded; the largest bypass; schedules with a bypass beyond the bound. */
  calls: number;
  maxBypass: number;
  /** The largest bypass counting every later call (no arrival resolution). */
  rawMaxBypass: number;
  overtaken: number;
  bypassSchedules: number;
  /** The longest stretch with nobody holding while a call waited, as a share of its schedule's bound (max). */
  longestIdleShare: number;
  /** ... and in ms (max), and the schedules beyond the bound. */
  longestIdle: number;
  idleSchedules: number;
  /** Calls without the lock that ended before their wait budget, or well after it. */
  badEnds: number;
  /** Fair checkers' violations (bypasses beyond the bound, idle stretches beyond the bound, bad ends). */
  fairViolations: number;
  /** Schedules with at least one violation or anomaly. */
  failedSchedules: number;
  /** The first failing schedules, for the report (seed + findings). */
  readonly failures: WorldResult[];
  elapsedMs: number;
  /** CPU time this process spent (user + system), in ms: a fairer speed figure on a shared machine. */
  cpuMs: number;
}

export interface RunOptions {
  readonly profile: Profile;
  readonly baseSeed: number;
  readonly count: number;
  /**
   * Schedules in flight at once (they share each microtask flush). Small is faster: the flush costs little,
   * while every schedule in flight adds to what each young-generation collection must copy (4: about 15 %
   * less CPU than 16 over 30,000 schedules; 256 doubled the CPU time).
   */
  readonly concurrency?: number;
  /** How many failing schedules to keep in `failures`. */
  readonly keepFailures?: number;
  /**
   * Claims the index of the next schedule to run, or undefined when none is left. Threads running one
   * run together share a claim counter; alone, schedules 0 … count−1 are run in order.
   */
  readonly claim?: () => number | undefined;
  /** Receives every schedule's result (tests compare them). */
  readonly onResult?: (result: WorldResult) => void;
}

/** The seed of schedule `index` of a run. */
export function seedOf(baseSeed: number, index: number): number {
  return (baseSeed + index) >>> 0;
}

/**
 * Runs `count` schedules and sums what they did and found.
 *
 * Determinism with the real (promise-based) core: every world advances one event per tick, synchronously, and
 * the tick ends with `setImmediate`, which Node runs only once the microtask queue is empty — so every
 * promise chain an event started has settled, and every timer or message it scheduled is in that world's
 * queue, before the world's next event runs. Worlds share nothing (each has its own scheduler, PRNG, servers
 * and Redlock instances), and the microtask queue is FIFO, so interleaving many worlds in one tick (which
 * amortises the cost of the flush) does not change the order of any one world's microtasks: a world's run is
 * a function of its seed alone.
 */
export function runSchedules(options: RunOptions): Promise<RunSummary> {
  const { profile, baseSeed, count } = options;
  const concurrency = options.concurrency ?? 4;
  const keep = options.keepFailures ?? 5;
  let counter = 0;
  const claim = options.claim ?? (() => (counter < count ? counter++ : undefined));
  const summary: RunSummary = {
    profile,
    baseSeed,
    schedules: 0,
    events: 0,
    operations: 0,
    granted: 0,
    busy: 0,
    unavailable: 0,
    lost: 0,
    aborted: 0,
    extended: 0,
    shortExtendFailed: 0,
    readsGranted: 0,
    permitsGranted: 0,
    messages: 0,
    lostMessages: 0,
    faults: 0,
    refusedUptime: 0,
    refusedDataAge: 0,
    reordered: 0,
    clockSteps: 0,
    stepsSeen: 0,
    overlaps: 0,
    staleTokens: 0,
    uncoveredOverlaps: 0,
    uncoveredSchedules: 0,
    uncoveredExamples: [],
    staleWrites: 0,
    staleWritesAccepted: 0,
    writesRejected: 0,
    anomalies: 0,
    fairSchedules: 0,
    fairOps: 0,
    fairGranted: 0,
    turnSplits: 0,
    calls: 0,
    maxBypass: 0,
    rawMaxBypass: 0,
    overtaken: 0,
    bypassSchedules: 0,
    longestIdleShare: 0,
    longestIdle: 0,
    idleSchedules: 0,
    badEnds: 0,
    fairViolations: 0,
    failedSchedules: 0,
    failures: [],
    elapsedMs: 0,
    cpuMs: 0,
  };
  const began = performance.now();
  const cpu = process.cpuUsage();
  return new Promise((resolve, reject) => {
    let active: World[] = [];
    let exhausted = false;
    const tick = () => {
      try {
        const still: World[] = [];
        for (const world of active) {
          if (world.step()) still.push(world);
          else {
            const result = world.result();
            options.onResult?.(result);
            add(summary, result, keep);
          }
        }
        active = still;
        // New worlds start after the others stepped: their first event runs only after this flush.
        while (active.length < concurrency && !exhausted) {
          const index = claim();
          if (index === undefined) {
            exhausted = true;
            break;
          }
          const world = new World(seedOf(baseSeed, index), profile);
          world.start();
          active.push(world);
        }
        if (active.length > 0) setImmediate(tick);
        else {
          summary.elapsedMs = performance.now() - began;
          const used = process.cpuUsage(cpu);
          summary.cpuMs = (used.user + used.system) / 1000;
          resolve(summary);
        }
      } catch (error) {
        reject(error);
      }
    };
    setImmediate(tick);
  });
}

/** Runs one schedule alone, with its trace. */
export function runOne(seed: number, profile: Profile): Promise<{ result: WorldResult; trace: string[] }> {
  return new Promise((resolve, reject) => {
    const world = new World(seed, profile, true);
    world.start();
    const tick = () => {
      try {
        if (world.step()) setImmediate(tick);
        else resolve({ result: world.result(), trace: world.lines });
      } catch (error) {
        reject(error);
      }
    };
    setImmediate(tick);
  });
}

export function add(summary: RunSummary, result: WorldResult, keep: number): void {
  summary.schedules++;
  summary.events += result.events;
  summary.operations += result.stats.operations;
  summary.granted += result.stats.granted;
  summary.busy += result.stats.busy;
  summary.unavailable += result.stats.unavailable;
  summary.lost += result.stats.lost;
  summary.aborted += result.stats.aborted;
  summary.extended += result.stats.extended;
  summary.shortExtendFailed += result.stats.shortExtendFailed;
  summary.readsGranted += result.stats.readsGranted;
  summary.permitsGranted += result.stats.permitsGranted;
  summary.messages += result.counters.messages;
  summary.lostMessages += result.counters.lostRequests + result.counters.lostReplies;
  summary.faults += result.counters.faults;
  summary.refusedUptime += result.counters.refusedUptime;
  summary.refusedDataAge += result.counters.refusedDataAge;
  summary.reordered += result.counters.reordered;
  summary.clockSteps += result.counters.clockSteps;
  summary.stepsSeen += result.counters.stepsSeen;
  summary.overlaps += result.overlaps;
  summary.staleTokens += result.staleTokens;
  summary.uncoveredOverlaps += result.uncoveredOverlaps;
  summary.staleWrites += result.staleWrites;
  summary.staleWritesAccepted += result.staleWritesAccepted;
  summary.writesRejected += result.writesRejected;
  if (result.uncoveredOverlaps > 0) {
    summary.uncoveredSchedules++;
    if (summary.uncoveredExamples.length < keep) summary.uncoveredExamples.push(result);
  }
  summary.anomalies += result.anomalies.length;
  addFair(summary, result);
  if (result.findings.length > 0) {
    summary.failedSchedules++;
    if (summary.failures.length < keep) summary.failures.push(result);
  }
}

function addFair(summary: RunSummary, result: WorldResult): void {
  const { fair } = result;
  if (result.fairWaiting !== 'off') summary.fairSchedules++;
  summary.fairOps += result.stats.fairOps;
  summary.fairGranted += result.stats.fairGranted;
  summary.turnSplits += result.counters.turnSplits;
  summary.calls += fair.calls;
  summary.maxBypass = Math.max(summary.maxBypass, fair.maxBypass);
  summary.rawMaxBypass = Math.max(summary.rawMaxBypass, fair.rawMaxBypass);
  summary.overtaken += fair.overtaken;
  if (fair.maxBypass > BYPASS_BOUND) summary.bypassSchedules++;
  if (fair.idleBound > 0) {
    summary.longestIdleShare = Math.max(summary.longestIdleShare, fair.longestIdle / fair.idleBound);
    summary.longestIdle = Math.max(summary.longestIdle, fair.longestIdle);
    if (fair.longestIdle > fair.idleBound) summary.idleSchedules++;
  }
  summary.badEnds += fair.badEnds;
  summary.fairViolations += fair.violations;
}

/** The one-line summary printed after each run. */
export function formatSummary(summary: RunSummary): string {
  const rate = summary.schedules / (summary.elapsedMs / 1000);
  const violations = summary.overlaps + summary.staleTokens + summary.anomalies;
  return (
    `sim[${summary.profile}] base seed ${summary.baseSeed}: ${summary.schedules} schedules in ` +
    `${(summary.elapsedMs / 1000).toFixed(1)} s (${Math.round(rate)}/s; CPU ${(summary.cpuMs / 1000).toFixed(1)} s), ` +
    `${summary.events} events; ` +
    `${summary.operations} operations (${summary.granted} granted (${summary.readsGranted} reads, ${summary.permitsGranted} permits), ${summary.busy} busy, ` +
    `${summary.unavailable} unavailable, ${summary.aborted} aborted, ${summary.lost} lost, ` +
    `${summary.extended} extended${summary.shortExtendFailed ? `, ${summary.shortExtendFailed} short extensions missed their quorum` : ''}); ` +
    `${summary.messages} messages (${summary.lostMessages} lost), ${summary.faults} faults ` +
    `(guard refusals: ${summary.refusedUptime} by uptime, ${summary.refusedDataAge} by data age; ` +
    `${summary.reordered} requests reordered)` +
    (summary.clockSteps > 0 ? `; ${formatSteps(summary)}` : '') +
    (summary.fairOps > 0 || FAIR_PROFILES.includes(summary.profile) ? `; ${formatFair(summary)}` : '') +
    `; violations: ${violations} (${summary.overlaps} overlaps, ${summary.staleTokens} stale tokens, ` +
    `${summary.anomalies} anomalies) in ${summary.failedSchedules} schedules`
  );
}

/** Fair waiting: how much ran fair, and what the fair profiles' checkers found. */
function formatFair(summary: RunSummary): string {
  const order = summary.profile.startsWith('fair-order');
  const split = summary.profile.startsWith('fair-split');
  return (
    `fair waiting in ${summary.fairSchedules} schedules: ${summary.fairOps} fair operations ` +
    `(${summary.fairGranted} granted), ${summary.turnSplits} attempts split by turns` +
    (order
      ? `; bypass by calls arriving more than ${ARRIVAL_RESOLUTION} ms later (K = ${BYPASS_BOUND}): largest ` +
        `${summary.maxBypass}, ${summary.bypassSchedules} schedules beyond K; by any later call: largest ` +
        `${summary.rawMaxBypass}, ${summary.overtaken} of ${summary.calls} calls overtaken`
      : '') +
    (split
      ? `; progress: longest stretch with nobody holding while a call waited ${summary.longestIdle.toFixed(1)} ms ` +
        `(${(100 * summary.longestIdleShare).toFixed(0)} % of its bound), ${summary.idleSchedules} schedules beyond ` +
        `the bound, ${summary.badEnds} calls ending off their budget, of ${summary.calls} calls`
      : '')
  );
}

/** The clock steps of running nodes: injected, seen, what the detection cannot cover, fenced writes. */
function formatSteps(summary: RunSummary): string {
  return (
    `${summary.clockSteps} clock steps of running nodes (${summary.stepsSeen} clock-step events); ` +
    `${summary.uncoveredOverlaps} overlaps uncovered (no earlier sample of the stepped node) in ` +
    `${summary.uncoveredSchedules} schedules; writes: ${summary.staleWrites} stale (interleaving without ` +
    `fencing), ${summary.staleWritesAccepted} accepted by the fenced register, ${summary.writesRejected} rejected`
  );
}
