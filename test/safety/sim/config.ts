import type { RedlockOptions } from '../../../lib/core';
import type { LinkSpec } from './connection';
import type { Prng } from './prng';
import type { ServerSpec } from './server';
import { FAIR_PROFILES, fairConfig, withFairWaiting } from './fair-config';

/**
 * What a run explores. `safe` keeps every assumption the algorithm states (client clock drift within the
 * drift factor, restart guard on, sane node clocks) and must find nothing. The negative controls each break
 * exactly one assumption and must find violations, proving the oracles can fail: `drift-beyond` (client clocks
 * 5× the drift factor slow), `no-guard` (restart guard off, empty restarts), `skip-validity` (the core's
 * test-only hook that hands out expired locks, with long delays), `clock-back` (a node's wall clock steps back
 * on restart: fencing tokens can repeat). `short-extend` is `safe` plus `extend(lock, ttl)` with a ttl shorter
 * than the lock's: a legitimate call that exposed a core bug (see the spec); `short-extend-old-deadline` is its
 * control: clients that, after such an extension failed, work to the deadline they had before the call (what
 * the core told them before the fix) must overlap.
 *
 * The restart guard in both modes: `safe` runs it in its precise mode (INFO readable), `safe-portable` in its
 * portable mode (INFO denied: the data-age marker) on nodes that restart empty — the case that mode covers; a
 * restart that restored the marker but lost the last writes is its documented gap, so no persistence there.
 * `guard-early-uptime` (INFO's whole-second uptime used without the second taken off, each node's first
 * restart at the worst sub-second phase: just before its wall clock ticks a second) and `guard-early-data-age`
 * (a lost marker's age counted from 90 % of a window before the acquire that found it missing) each
 * clear the guard early in one mode, and must find overlaps.
 *
 * The precise mode takes a second off INFO's whole seconds, so at the simulation's time scale (ttls of
 * 20–200 ms) a node that restarted refuses for the rest of its schedule: `clock-back`, which needs restarted
 * nodes to hand out tokens again, runs the guard in its portable mode (a window measured in ms).
 *
 * Reordering (docs/DESIGN.md §7): a quarter of every profile's schedules let requests run after requests sent
 * later on the same connection. `reorder` makes it frequent among three contending clients with no node
 * faults and must find nothing; `reorder-reused-owner`, the same with the core's test-only hook that reuses
 * one owner value across the attempts of an acquisition, must find overlaps (a late release deleting a key
 * that a later attempt had won and counted).
 *
 * Read-write locks: 40 % of every profile's schedules make half their operations reads; the checker lets
 * readers overlap readers only. Controls: `read-ignores-writer` (nodes grant a reader while a writer holds the
 * lock) and `reader-client-clock` (a reader's expiry counted on a client clock running ahead of the node's,
 * as a client-computed expiry would be: the node drops the reader while it still works) must find overlaps.
 *
 * Clock steps of running nodes (docs/DESIGN.md §17): in 15 % of the `safe` and `safe-portable` schedules
 * (every `clock-steps` one) one node's wall clock steps forward or back while it runs, once or twice — by
 * 0.5–3 × ttl, or by a few ms (near the size the detection can see) — ending its keys early or lengthening
 * them. In three quarters of those schedules the clients are long-lived instances: each read every node's clock
 * (a lock of its own, tried and released) before the schedule's first operation; in the rest they are fresh,
 * and the first answer they get from the stepped node is their baseline (what the detection cannot cover:
 * world.ts counts such overlaps apart). `clock-steps-undetected` (the same schedules, `detectClockSteps: false`) must find overlaps;
 * `majority-step` (3 of 5 nodes stepping forward together, fresh clients, every operation fenced) finds
 * overlaps with the detection on, and its fenced writes must never interleave.
 */
export type Profile =
  | 'safe'
  | 'safe-portable'
  | 'drift-beyond'
  | 'no-guard'
  | 'guard-early-uptime'
  | 'guard-early-data-age'
  | 'skip-validity'
  | 'clock-back'
  | 'short-extend'
  | 'short-extend-old-deadline'
  | 'reorder'
  | 'reorder-reused-owner'
  | 'read-ignores-writer'
  | 'reader-client-clock'
  | 'semaphore-per-node-count'
  | 'clock-steps'
  | 'clock-steps-undetected'
  | 'majority-step'
  | 'fair-order'
  | 'fair-order-unfair'
  | 'fair-split'
  | 'fair-split-endless-turn';

export const PROFILES: readonly Profile[] = [
  'safe',
  'safe-portable',
  'guard-early-uptime',
  'guard-early-data-age',
  'drift-beyond',
  'no-guard',
  'skip-validity',
  'clock-back',
  'short-extend',
  'short-extend-old-deadline',
  'reorder',
  'reorder-reused-owner',
  'read-ignores-writer',
  'reader-client-clock',
  'semaphore-per-node-count',
  'clock-steps',
  'clock-steps-undetected',
  'majority-step',
  ...FAIR_PROFILES,
];

export interface OpSpec {
  readonly kind: 'acquire' | 'try' | 'using';
  readonly resources: readonly string[];
  readonly ttl: number;
  readonly wait: number;
  readonly fencing: boolean;
  /** How long the critical section wants to run, on the client's clock. */
  readonly work: number;
  /** Pause before the operation, on the client's clock. */
  readonly think: number;
  /** `acquire`/`try`: call `extend()` halfway through the work. */
  readonly extendMidway: boolean;
  /** The ttl passed to that `extend()` (undefined: the lock's own ttl). */
  readonly extendTtl: number | undefined;
  /** Abort the acquisition through its `signal` after this many ms on the client's clock (undefined: never). */
  readonly abortAfter: number | undefined;
  /** `using`: the loss policy. */
  readonly onLockLost: 'throw' | 'warn';
  /** A read-write lock's mode: readers share the resource, a writer holds it alone. */
  readonly mode: 'read' | 'write';
  /** A counting semaphore of this many permits on the resource `p` (then `resources` is `['p']`). */
  readonly permits?: number;
  /** The call's `fair` option (undefined: the instance's default). Only on writers of a lock. */
  readonly fair?: boolean;
}

export interface ClientSpec {
  /** Clock rate: 1 + ε. */
  readonly rate: number;
  readonly offset: number;
  /** Chance that a timer fires late, and by up to how many ms (a busy event loop). */
  readonly lateChance: number;
  readonly lateMax: number;
  readonly ops: readonly OpSpec[];
  /**
   * Callers sharing the client's instance (default 1): the operations are dealt round-robin to this many
   * sequences that run at once — a process whose callers meet in its local queue.
   */
  readonly lanes?: number;
  /** Deaf to release announcements (its connections offer no `watch`): it polls. */
  readonly deaf?: boolean;
  /** Its instance's own retry delays (the others use the shared options). */
  readonly overrides?: { readonly retryDelay: number; readonly maxRetryDelay: number };
}

export type FaultSpec =
  | { readonly kind: 'crash'; readonly at: number; readonly node: number; readonly downFor: number }
  | { readonly kind: 'pause'; readonly at: number; readonly node: number; readonly pausedFor: number }
  | {
      readonly kind: 'cut';
      readonly at: number;
      readonly node: number;
      readonly client: number;
      readonly cutFor: number;
    }
  /** A running node's wall clock steps by `stepMs` (positive: forward): `TIME` and its keys' expiry move. */
  | { readonly kind: 'step'; readonly at: number; readonly node: number; readonly stepMs: number };

export interface WorldConfig {
  readonly seed: number;
  readonly profile: Profile;
  readonly servers: readonly ServerSpec[];
  /** links[client][node]. */
  readonly links: readonly (readonly LinkSpec[])[];
  readonly clients: readonly ClientSpec[];
  readonly options: RedlockOptions;
  readonly unsafeSkipValidityCheck: boolean;
  /** The core's test-only hook that reuses one owner value across the attempts of an acquisition. */
  readonly unsafeReuseOwner: boolean;
  /** Whether nodes offer release announcements (`LockNode.watch`). */
  readonly watch: boolean;
  readonly faults: readonly FaultSpec[];
  /**
   * Long-lived instances: each client reads every node's clock (a lock of its own) at the start, before its
   * first operation — so a later step of a node's clock is judged against an earlier sample (DESIGN §17).
   */
  readonly warmUp: boolean;
  /** Fair waiting (docs/DESIGN.md §18): off, the instances' default, or passed by some calls. */
  readonly fairWaiting: 'off' | 'instance' | 'calls';
}

const EPOCH_US = 1.7e15;

/** Profiles about restarts: 3 nodes, only crashes (1–4 per schedule). */
const CRASHY: readonly Profile[] = ['no-guard', 'clock-back', 'guard-early-uptime', 'guard-early-data-age'];

/**
 * Profiles whose every schedule has a running node's clock step (a minority: one node): `safe` otherwise, with
 * more contention (3 clients, 2 operations each, every one waiting) and no crashes, so that more steps meet a
 * holder on exactly a quorum and a contender (without the detection: overlaps in about 0.4 % of them).
 */
const STEPPING: readonly Profile[] = ['clock-steps', 'clock-steps-undetected'];

/**
 * Share of the `safe` and `safe-portable` schedules with a running node's clock step: 15 % costs the main run
 * about 4 % more CPU (a quarter cost 11 %: the warm-up locks and the retries after refusals).
 */
const STEP_SHARE = 0.15;

/** Draws one schedule's configuration (swarm testing: every seed gets its own mix of features and faults). */
export function randomConfig(rng: Prng, seed: number, profile: Profile): WorldConfig {
  if (FAIR_PROFILES.includes(profile)) return fairConfig(rng, seed, profile);
  const config = unfairConfig(rng, seed, profile);
  return profile === 'safe' || profile === 'safe-portable' ? withFairWaiting(config) : config;
}

function unfairConfig(rng: Prng, seed: number, profile: Profile): WorldConfig {
  const crashy = CRASHY.includes(profile);
  const portable =
    profile === 'safe-portable' || profile === 'guard-early-data-age' || profile === 'clock-back';
  const majorityStep = profile === 'majority-step';
  const nodeCount = crashy ? 3 : majorityStep ? 5 : rng.pick([3, 3, 3, 5, 5, 4]);
  // `reorder` and its control share one configuration: contention, no node faults, frequent reordering.
  const reorderControl = profile === 'reorder' || profile === 'reorder-reused-owner';
  const stepping = STEPPING.includes(profile);
  const clientCount =
    profile === 'skip-validity' || reorderControl || profile === 'semaphore-per-node-count' || stepping
      ? 3
      : rng.int(2, 3);
  const ttl = profile === 'drift-beyond' ? rng.int(20, 80) : rng.int(20, 200);
  const driftFactor = rng.pick([0.01, 0.02, 0.05, 0.1]);
  const nodeTimeout = profile === 'skip-validity' ? ttl * 2 : rng.int(3, Math.max(4, Math.floor(ttl / 4)));
  const retryDelay = rng.int(1, 10);
  const resources = profile === 'skip-validity' || rng.chance(0.7) ? ['a'] : ['a', 'b'];
  // Read-write locks (docs/DESIGN.md §15): in 40 % of the schedules (all of their controls') half the
  // operations are reads.
  const readControl = profile === 'read-ignores-writer' || profile === 'reader-client-clock';
  const readShare = readControl ? 0.6 : rng.chance(0.4) ? 0.5 : 0;
  // Counting semaphores (§14): in 30 % of the schedules (all of their control's) a third of the operations
  // take one of 2 permits of `p`.
  const semaphoreControl = profile === 'semaphore-per-node-count';
  const permitShare = semaphoreControl ? 1 : rng.chance(0.3) ? 0.35 : 0;

  const skewUs = (ttl * 1000) / 4; // sane node clocks: skew well below the restart-guard window
  const servers: ServerSpec[] = Array.from({ length: nodeCount }, (_, i) => ({
    name: `n${i}`,
    clockOffsetUs: EPOCH_US + rng.real(-skewUs, skewUs),
    clockRate: 1 + rng.real(-1e-4, 1e-4),
    bootTime: rng.chance(0.05) ? -rng.real(0, ttl) : -1e7,
    uptimeGranularity: rng.chance(0.2) || profile === 'guard-early-uptime' ? 1000 : 1,
    infoReadable: !portable,
    guardMutation:
      profile === 'guard-early-uptime'
        ? 'uptime-over-reported'
        : profile === 'guard-early-data-age'
          ? 'data-age-head-start'
          : undefined,
    clockStepBackUs: profile === 'clock-back' ? 1e7 : 0,
    readMutation:
      profile === 'read-ignores-writer'
        ? 'ignore-writer'
        : profile === 'reader-client-clock'
          ? 'client-clock'
          : undefined,
    persistenceLag: rng.chance(0.25) && !portable ? rng.real(0, ttl * 2) : undefined,
  }));

  const slowChance = rng.pick([0, 0, 0.02, 0.1, profile === 'skip-validity' ? 0.5 : 0.3]);
  const slowMax = profile === 'skip-validity' ? ttl * 2 : rng.pick([nodeTimeout * 3, ttl * 1.5]);
  const shortExtend = profile === 'short-extend' || profile === 'short-extend-old-deadline';
  const lossChance = rng.pick(shortExtend ? [0.05, 0.15, 0.3] : [0, 0, 0.01, 0.05, 0.15]);
  // Reordering fault (docs/DESIGN.md §7): in a quarter of the schedules (all of its control's), requests
  // sometimes run after requests sent later on the same connection.
  const reorderChance = reorderControl
    ? rng.pick([0.1, 0.3, 0.5])
    : rng.chance(0.25)
      ? rng.pick([0.02, 0.1, 0.3])
      : 0;
  const reorderDelay: [number, number] = [0, Math.max(nodeTimeout, retryDelay * 4)];
  const links = Array.from({ length: clientCount }, () =>
    Array.from({ length: nodeCount }, (): LinkSpec => {
      const lo = rng.real(0.05, 0.5);
      const sluggish = rng.chance(0.1) ? nodeTimeout : 0;
      return {
        latency: [lo + sluggish * 0.4, lo + sluggish * 0.6 + rng.real(0, 1)],
        slowChance,
        slowDelay: [nodeTimeout * 0.5, Math.max(nodeTimeout, slowMax)],
        lossChance,
        reorderChance,
        reorderDelay,
      };
    }),
  );

  // The clock-step pair: 2 operations per client, each waiting (contenders retry while a copy ended early).
  const opsPerClient = stepping ? 2 : rng.int(1, 2);
  const clients = Array.from({ length: clientCount }, (): ClientSpec => {
    const epsilon = clientDrift(rng, profile, driftFactor);
    const lateChance = rng.pick([0, 0, 0.1, 0.5]);
    return {
      rate: 1 + epsilon,
      offset: rng.real(0, 1e6),
      lateChance,
      lateMax: rng.real(0, 3),
      ops: Array.from({ length: opsPerClient }, () => {
        const op = randomOp(rng, profile, ttl, resources, readShare);
        return permitShare > 0 && rng.chance(permitShare)
          ? { ...op, resources: ['p'], permits: 2, mode: 'write' as const }
          : op;
      }),
    };
  });

  const horizon = opsPerClient * ttl * 1.5;
  const faultCount =
    profile === 'drift-beyond' ||
    profile === 'skip-validity' ||
    reorderControl ||
    semaphoreControl ||
    majorityStep
      ? 0
      : profile === 'safe' || profile === 'safe-portable'
        ? rng.int(0, 3)
        : rng.int(1, 4);
  const faults = Array.from({ length: faultCount }, () =>
    randomFault(rng, profile, horizon, ttl, nodeCount, clientCount),
  );
  const steps =
    stepping || ((profile === 'safe' || profile === 'safe-portable') && rng.chance(STEP_SHARE))
      ? randomSteps(rng, horizon, ttl, nodeCount)
      : majorityStep
        ? majoritySteps(rng, horizon, ttl, nodeCount)
        : [];
  faults.push(...steps);

  if (profile === 'guard-early-uptime') {
    // Each node's first restart just before a tick of its wall clock's seconds: INFO then reports a whole
    // second of uptime a few ms after the start (the chaos suite's worst case).
    servers.forEach((server, i) => {
      const crash = faults.find((fault) => fault.kind === 'crash' && fault.node === i);
      if (!crash || crash.kind !== 'crash') return;
      const restartUs = (crash.at + crash.downFor) * 1000 * server.clockRate;
      const phaseUs = (((server.clockOffsetUs + restartUs) % 1e6) + 1e6) % 1e6;
      const wantedUs = 1e6 - rng.real(1_000, 50_000);
      servers[i] = { ...server, clockOffsetUs: server.clockOffsetUs + (wantedUs - phaseUs) };
    });
  }

  return {
    seed,
    profile,
    servers,
    links,
    clients,
    options: {
      ttl,
      driftFactor,
      nodeTimeout,
      retryDelay,
      maxRetryDelay: retryDelay * rng.int(1, 20),
      wait: 0,
      fencing: true,
      restartGuard: profile === 'no-guard' ? false : rng.chance(0.8) ? true : ttl + rng.int(0, ttl),
      autoExtend: true,
      logger: false,
      detectClockSteps: profile !== 'clock-steps-undetected',
    },
    unsafeSkipValidityCheck: profile === 'skip-validity',
    unsafeReuseOwner: profile === 'reorder-reused-owner',
    watch: rng.chance(0.5),
    faults,
    warmUp: steps.length > 0 && !majorityStep && rng.chance(0.75),
    fairWaiting: 'off',
  };
}

/**
 * Steps of one running node's clock (a minority), once or twice: forward (70 %) or back, by 0.5–3 × ttl — or,
 * in a quarter of them, by 2–10 ms: near the size the detection can see (2 ms plus the two round trips), and
 * near the lock's drift allowance (below it a step is harmless).
 */
function randomSteps(rng: Prng, horizon: number, ttl: number, nodes: number): FaultSpec[] {
  const node = rng.int(0, nodes - 1);
  return Array.from({ length: rng.int(1, 2) }, (): FaultSpec => {
    const size = rng.chance(0.25) ? rng.real(2, 10) : rng.real(0.5, 3) * ttl;
    return { kind: 'step', at: rng.real(0, horizon), node, stepMs: rng.chance(0.7) ? size : -size };
  });
}

/** The `majority-step` control: a majority of the nodes (3 of 5) step forward together, by 0.5–3 × ttl. */
function majoritySteps(rng: Prng, horizon: number, ttl: number, nodes: number): FaultSpec[] {
  const at = rng.real(0, horizon);
  const stepMs = rng.real(0.5, 3) * ttl;
  const first = rng.int(0, nodes - 1);
  return [0, 1, 2].map((i): FaultSpec => ({ kind: 'step', at, node: (first + i) % nodes, stepMs }));
}

/** ε of a client clock: within the drift factor (boundary values often), or 5× beyond it. */
function clientDrift(rng: Prng, profile: Profile, driftFactor: number): number {
  if (profile === 'drift-beyond') return -5 * driftFactor * rng.real(0.8, 1);
  const roll = rng.next();
  if (roll < 0.3) return -0.999 * driftFactor;
  if (roll < 0.45) return 0.999 * driftFactor;
  return rng.real(-0.999, 0.999) * driftFactor;
}

function randomOp(
  rng: Prng,
  profile: Profile,
  ttl: number,
  resources: readonly string[],
  readShare: number,
): OpSpec {
  const drift = profile === 'drift-beyond';
  const short = profile === 'short-extend' || profile === 'short-extend-old-deadline';
  const kind =
    drift || short ? 'acquire' : rng.pick(['acquire', 'acquire', 'try', 'using', 'using'] as const);
  const several = resources.length > 1 && rng.chance(0.3);
  const opTtl = rng.chance(0.7) ? ttl : rng.int(10, ttl);
  let extendTtl: number | undefined;
  if (short) extendTtl = rng.int(10, Math.max(10, Math.floor(opTtl / 2)));
  // Up to the instance ttl: the restart guard covers a ttl that large and no larger.
  else if (rng.chance(0.5)) extendTtl = rng.int(opTtl, ttl);
  return {
    kind,
    resources: several ? resources : [rng.pick(resources)],
    ttl: opTtl,
    wait: drift
      ? ttl * 3
      : short
        ? ttl * 5
        : rng.pick(
            STEPPING.includes(profile)
              ? [ttl / 2, ttl * 2, ttl * 5, ttl * 5]
              : [0, ttl / 2, ttl * 2, ttl * 5],
          ),
    fencing: rng.chance(0.9) || profile === 'majority-step',
    work:
      kind === 'using' ? rng.real(0, ttl * 4) : drift ? ttl * 2 : rng.real(short ? ttl / 2 : 0, ttl * 1.5),
    think: rng.real(0, ttl),
    extendMidway: short || rng.chance(0.3),
    extendTtl,
    abortAfter: kind !== 'try' && rng.chance(0.1) ? rng.real(0, ttl) : undefined,
    onLockLost: rng.chance(0.5) ? 'throw' : 'warn',
    mode: readShare > 0 && rng.chance(readShare) ? 'read' : 'write',
  };
}

function randomFault(
  rng: Prng,
  profile: Profile,
  horizon: number,
  ttl: number,
  nodes: number,
  clients: number,
): FaultSpec {
  const at = rng.real(0, horizon);
  const node = rng.int(0, nodes - 1);
  const roll = rng.next();
  // The clock-step pair draws no crashes: a precise-mode node that restarted refuses for the rest of the
  // schedule, and a stepped node's early-ended copy matters only to a holder on exactly a quorum — a node
  // paused or cut off, not gone.
  if (CRASHY.includes(profile) || (roll < 0.4 && !STEPPING.includes(profile))) {
    return { kind: 'crash', at, node, downFor: rng.chance(0.3) ? 0 : rng.real(0, ttl * 2) };
  }
  if (roll < 0.7) return { kind: 'pause', at, node, pausedFor: rng.real(0, ttl * 2) };
  return { kind: 'cut', at, node, client: rng.int(0, clients - 1), cutFor: rng.real(0, ttl * 2) };
}
