import { RedlockCore } from '../../../lib/core';
import { replayFencedWrites } from '../checkers/fenced-register';
import {
  Interval,
  OverAdmission,
  Overlap,
  findExclusionViolations,
  findOverAdmissions,
  findStaleTokens,
} from '../checkers/intervals';
import { CallRecord, bypasses, longestIdle } from '../checkers/fairness';
import { ClientSink, OpStats, SimClient, emptyOpStats, runClient } from './client';
import { ARRIVAL_RESOLUTION, BYPASS_BOUND, FAIR_PROFILES, progressBound } from './fair-config';
import { Profile, WorldConfig, randomConfig } from './config';
import { Connection } from './connection';
import type { SimContext, SimCounters } from './context';
import { Prng } from './prng';
import { DriftingClock, Scheduler } from './scheduler';
import { VirtualServer } from './server';

/** The semaphore of the schedules that use one (config.ts) and its permits. */
const SEMAPHORE = 'p';
const SEMAPHORE_PERMITS = 2;

/** Virtual time after which a schedule whose clients have not finished counts as stuck. */
const TIME_CAP = 600_000;

/** What one schedule did and found. */
export interface WorldResult {
  readonly seed: number;
  readonly profile: Profile;
  readonly events: number;
  readonly stats: OpStats;
  readonly counters: SimCounters;
  readonly sections: number;
  /** Safety violations: overlapping sections (over-admissions included), stale tokens. */
  readonly overlaps: number;
  readonly staleTokens: number;
  /**
   * Overlaps (and over-admissions) the clock-step detection cannot prevent, not counted in `overlaps`: the later
   * holder's instance had no sample of a node before that node's clock stepped forward — its first answer was
   * the baseline (docs/DESIGN.md §17, "Not covered"). Only with the detection on.
   */
  readonly uncoveredOverlaps: number;
  /**
   * The holders' writes to their resources (checkers/fenced-register.ts): stale ones — which interleave with
   * another holder's on a register that ignores tokens —, those a fenced register still let interleave, and
   * those it rejected.
   */
  readonly staleWrites: number;
  readonly staleWritesAccepted: number;
  readonly writesRejected: number;
  /** Everything else that must never happen: expired grants, unexpected errors, stuck clients, bad timers. */
  readonly anomalies: readonly string[];
  /** Human-readable descriptions of every violation and anomaly. */
  readonly findings: readonly string[];
  /** Descriptions of the uncovered overlaps. */
  readonly uncovered: readonly string[];
  /** Fair waiting (docs/DESIGN.md §18): how the schedule's clients waited. */
  readonly fairWaiting: WorldConfig['fairWaiting'];
  /** The fair profiles' checkers (0 elsewhere): see {@link FairVerdict}. */
  readonly fair: FairVerdict;
}

/** What fair waiting's checkers found in one schedule of a fair profile (all 0 in the others). */
export interface FairVerdict {
  /** Calls recorded, and those granted. */
  readonly calls: number;
  /**
   * `fair-order*`: the largest bypass count of a call by calls that arrived more than ARRIVAL_RESOLUTION ms
   * after it (checked), the same counting every later call (raw), and the calls overtaken at all (raw).
   */
  readonly maxBypass: number;
  readonly rawMaxBypass: number;
  readonly overtaken: number;
  /** `fair-split*`: the longest stretch with nobody holding while a call waited, and its bound (ms). */
  readonly longestIdle: number;
  readonly idleBound: number;
  /** Calls that ended without the lock before their wait budget ran out, or well after it. */
  readonly badEnds: number;
  /** Bypasses beyond {@link BYPASS_BOUND} (`fair-order*`) plus idle stretches beyond the bound (`fair-split*`). */
  readonly violations: number;
  /** Descriptions of those violations. */
  readonly findings: readonly string[];
}

const NO_FAIR_VERDICT: FairVerdict = {
  calls: 0,
  maxBypass: 0,
  rawMaxBypass: 0,
  overtaken: 0,
  longestIdle: 0,
  idleBound: 0,
  badEnds: 0,
  violations: 0,
  findings: [],
};

/** A step of a running node's clock, as injected. */
interface InjectedStep {
  readonly at: number;
  readonly node: number;
  readonly stepMs: number;
}

/**
 * One schedule: a few nodes, a few clients each running the real core over its own connections, a seeded
 * fault plan. The driver calls `start()` once, then `step()` once per tick until it returns false, letting
 * microtasks drain in between; `result()` runs the oracles.
 */
export class World implements SimContext {
  readonly scheduler = new Scheduler();
  readonly rng: Prng;
  readonly config: WorldConfig;
  readonly counters: SimCounters = {
    messages: 0,
    lostRequests: 0,
    lostReplies: 0,
    faults: 0,
    refusedUptime: 0,
    refusedDataAge: 0,
    reordered: 0,
    clockSteps: 0,
    stepsSeen: 0,
    turnSplits: 0,
  };
  readonly lines: string[] = [];
  readonly servers: VirtualServer[];
  private readonly stats = emptyOpStats();
  private readonly intervals: Interval[] = [];
  private readonly calls: CallRecord[] = [];
  /** Fair attempts: per owner value, whether some node granted it and some refused it for another's turn. */
  private readonly fairReplies = new Map<string, number>();
  private readonly anomalies: string[] = [];
  private readonly owners = new Map<string, string>();
  private readonly clients: SimClient[] = [];
  private readonly connections: Connection[][] = [];
  private readonly steps: InjectedStep[] = [];
  /** Per client: the `clock-step` events its instance emitted (node name, true time). */
  private readonly stepsSeen: { node: string; at: number }[][] = [];
  private finished = 0;

  constructor(
    readonly seed: number,
    profile: Profile,
    readonly tracing = false,
  ) {
    this.rng = new Prng(seed);
    this.config = randomConfig(this.rng, seed, profile);
    this.servers = this.config.servers.map((spec) => new VirtualServer(this, spec));
  }

  trace(line: string): void {
    this.lines.push(`${this.scheduler.now.toFixed(4).padStart(10)} ${line}`);
  }

  ownerName(owner: string): string {
    let name = this.owners.get(owner);
    if (name === undefined) this.owners.set(owner, (name = `o${this.owners.size}`));
    return name;
  }

  /**
   * A node's answer to a fair attempt (docs/DESIGN.md §18): an attempt granted by one node while another
   * refused it for an earlier waiter's turn is counted once in `turnSplits` — the nodes disagree on the head.
   */
  fairReply(owner: string, granted: boolean, turn: boolean): void {
    if (!granted && !turn) return;
    const seen = this.fairReplies.get(owner) ?? 0;
    const now = seen | (granted ? 1 : 0) | (turn ? 2 : 0);
    if (now === 3 && seen !== 3) this.counters.turnSplits++;
    this.fairReplies.set(owner, now);
  }

  start(): void {
    const { config, rng } = this;
    let connectionId = 0;
    config.clients.forEach((spec, id) => {
      const lateness = () => (rng.chance(spec.lateChance) ? rng.real(0, spec.lateMax) : 0);
      const clock = new DriftingClock(this.scheduler, spec.rate, spec.offset, lateness);
      const connections = this.servers.map(
        (server, node) =>
          new Connection(
            this,
            connectionId++,
            id,
            server,
            config.links[id][node],
            config.watch && !spec.deaf,
          ),
      );
      this.connections.push(connections);
      const redlock = new RedlockCore(
        connections,
        { ...config.options, ...spec.overrides },
        {
          clock,
          random: () => rng.next(),
          unsafeSkipValidityCheck: config.unsafeSkipValidityCheck,
          unsafeReuseOwner: config.unsafeReuseOwner,
        },
      );
      this.clients.push({ id, redlock, clock, ops: spec.ops, connections, lanes: spec.lanes });
      const seen: { node: string; at: number }[] = [];
      this.stepsSeen.push(seen);
      if (config.faults.some((fault) => fault.kind === 'step')) {
        redlock.on('clock-step', ({ node, step }) => {
          this.counters.stepsSeen++;
          seen.push({ node, at: this.scheduler.now });
          if (this.tracing) this.trace(`c${id} CLOCK-STEP seen on ${node}: ${step} ms`);
        });
      }
    });
    for (const fault of config.faults) this.scheduler.at(fault.at, () => this.inject(fault));
    const sink: ClientSink = {
      context: this,
      stats: this.stats,
      checkGrants: !config.unsafeSkipValidityCheck,
      keepDeadlineOfFailedExtend: config.profile === 'short-extend-old-deadline',
      perNodeCount: config.profile === 'semaphore-per-node-count',
      warmUp: config.warmUp,
      fairDefault: config.options.fair === true,
      section: (interval) => this.intervals.push(interval),
      call: (record) => this.calls.push(record),
      anomaly: (message) => this.anomalies.push(message),
    };
    for (const client of this.clients) {
      runClient(client, sink).then(
        () => this.finished++,
        (error: unknown) => {
          this.finished++;
          this.anomalies.push(`client ${client.id} crashed: ${String(error)}`);
        },
      );
    }
  }

  /** Runs one event. False once every client finished (or the schedule is stuck). */
  step(): boolean {
    if (this.finished === this.clients.length) return false;
    if (this.scheduler.now > TIME_CAP || !this.scheduler.step()) {
      this.anomalies.push(
        `stuck: ${this.clients.length - this.finished} client(s) never finished ` +
          `(virtual time ${this.scheduler.now.toFixed(1)} ms, events left: ${this.scheduler.now <= TIME_CAP ? 'none' : 'some'})`,
      );
      return false;
    }
    return true;
  }

  result(): WorldResult {
    // Semaphore sections (resource `p`, 2 permits): at most 2 at once; each permit exclusive with rising tokens.
    const onPermits = this.intervals.filter((i) => i.resource === SEMAPHORE);
    const perPermit = onPermits
      .filter((i) => i.permit !== undefined)
      .map((i) => ({ ...i, resource: `${i.resource}#${i.permit}` }));
    const locks = [...this.intervals.filter((i) => i.resource !== SEMAPHORE), ...perPermit];
    const { overlaps, overAdmissions, stale, uncovered } = this.classify(
      findExclusionViolations(locks),
      findOverAdmissions(onPermits, SEMAPHORE_PERMITS),
      findStaleTokens(locks),
      onPermits,
      locks,
    );
    const writes = replayFencedWrites(locks, true);
    const unfenced = replayFencedWrites(locks, false);
    const anomalies = [...this.anomalies];
    for (const client of this.clients) {
      if (client.clock.badDelays > 0)
        anomalies.push(`c${client.id}: ${client.clock.badDelays} timer(s) with a non-finite delay`);
    }
    const fair = FAIR_PROFILES.includes(this.config.profile) ? this.fairVerdict() : NO_FAIR_VERDICT;
    const checked = ['fair-order', 'fair-split'].includes(this.config.profile);
    const findings = [
      ...(checked ? fair.findings : []),
      ...overlaps.map((o) => this.describeOverlap(o)),
      ...stale.map((i) => `STALE TOKEN on ${i.resource}: ${show(i)}`),
      ...overAdmissions.map(
        (o) => `OVER-ADMISSION on ${o.resource} at ${o.at.toFixed(4)}: ${o.holders.join(', ')}`,
      ),
      ...(writes.interleaved > 0
        ? [`${writes.interleaved} stale writes accepted by a fenced register (two holders took turns)`]
        : []),
      ...anomalies,
    ];
    return {
      seed: this.seed,
      profile: this.config.profile,
      events: this.scheduler.events,
      stats: this.stats,
      counters: this.counters,
      sections: this.intervals.length,
      overlaps: overlaps.length + overAdmissions.length,
      staleTokens: stale.length,
      uncoveredOverlaps: uncovered.count,
      staleWrites: unfenced.interleaved,
      staleWritesAccepted: writes.interleaved,
      writesRejected: writes.rejected,
      anomalies,
      findings,
      uncovered: uncovered.descriptions,
      fairWaiting: this.config.fairWaiting,
      fair,
    };
  }

  /**
   * Fair waiting's checkers (docs/DESIGN.md §18). `fair-order*`: no call overtaken by more than
   * {@link BYPASS_BOUND} calls that arrived after it. `fair-split*`: nobody holds anything while a call waits
   * for longer than {@link progressBound}; and in both, a call without the lock ends by its wait budget (not
   * before it, nor well after: one more attempt and the clean-up, a node timeout each, and the client clock's
   * drift).
   */
  private fairVerdict(): FairVerdict {
    const { calls, config } = this;
    const order = config.profile === 'fair-order' || config.profile === 'fair-order-unfair';
    const findings: string[] = [];
    const none = { max: 0, overtaken: 0, worst: undefined };
    const { max, worst } = order ? bypasses(calls, ARRIVAL_RESOLUTION) : none;
    const raw = order ? bypasses(calls) : none;
    let violations = 0;
    if (max > BYPASS_BOUND && worst) {
      violations++;
      findings.push(
        `BYPASS: ${worst.call.holder} (arrived ${worst.call.arrival.toFixed(4)}, granted ` +
          `${worst.call.granted?.toFixed(4) ?? 'never'}) overtaken by ${max} calls that arrived more than ` +
          `${ARRIVAL_RESOLUTION} ms after it (bound ${BYPASS_BOUND}): ` +
          worst.by.map((c) => `${c.holder} (arrived ${c.arrival.toFixed(4)})`).join(', '),
      );
    }
    const idleBound = order ? 0 : progressBound(config);
    const idle = order ? { length: 0, from: 0, waiting: [] } : longestIdle(calls, this.intervals);
    if (idle.length > idleBound) {
      violations++;
      findings.push(
        `NO PROGRESS: nobody held anything for ${idle.length.toFixed(1)} ms from ${idle.from.toFixed(4)} ` +
          `(bound ${idleBound.toFixed(1)} ms) while ${idle.waiting.join(', ')} waited`,
      );
    }
    const { driftFactor, nodeTimeout } = config.options;
    let badEnds = 0;
    for (const call of calls) {
      if (call.granted !== undefined) continue;
      const took = call.ended - call.arrival;
      const early = took < call.wait * (1 - driftFactor!) - 1;
      const late = took > call.wait * (1 + driftFactor!) + 4 * nodeTimeout! + 10;
      if (!early && !late) continue;
      badEnds++;
      findings.push(
        `${call.holder} ended without the lock after ${took.toFixed(1)} ms of a ${call.wait} ms wait ` +
          `(${early ? 'before' : 'well after'} its budget)`,
      );
    }
    return {
      calls: calls.length,
      maxBypass: max,
      rawMaxBypass: raw.max,
      overtaken: raw.overtaken,
      longestIdle: idle.length,
      idleBound,
      badEnds,
      violations: violations + badEnds,
      findings,
    };
  }

  /**
   * Sets apart what the clock-step detection cannot prevent (DESIGN §17, "Not covered": an instance with no
   * earlier sample of a node whose clock stepped): an overlap or over-admission one of whose holders was
   * granted uncovered ({@link uncoveredGrant}), and a stale token of a section in such an overlap or below the
   * token of an uncovered grant. The rest
   * counts as violations. Only with the detection on and a step injected.
   */
  private classify(
    overlaps: Overlap[],
    overAdmissions: OverAdmission[],
    stale: Interval[],
    onPermits: readonly Interval[],
    locks: readonly Interval[],
  ): {
    overlaps: Overlap[];
    overAdmissions: OverAdmission[];
    stale: Interval[];
    uncovered: { count: number; descriptions: string[] };
  } {
    const none = { count: 0, descriptions: [] };
    if (this.steps.length === 0 || this.config.options.detectClockSteps === false)
      return { overlaps, overAdmissions, stale, uncovered: none };
    const blind = (i: Interval) => this.uncoveredGrant(i.holder, i.start);
    const apart = overlaps.filter((o) => blind(o.first) || blind(o.second));
    const admitted = overAdmissions.filter((o) =>
      o.holders.some((holder) => onPermits.some((i) => i.holder === holder && blind(i))),
    );
    // A stale token of an uncovered overlap, or below a token an uncovered grant drew from a stepped clock (the
    // nodes that kept that inflated counter lost it since): the same gap, seen through fencing.
    const inflatedBefore = (i: Interval) =>
      locks.some(
        (p) => p.resource === i.resource && p.start < i.start && (p.token ?? 0) > (i.token ?? 0) && blind(p),
      );
    const staleApart = stale.filter(
      (i) => apart.some((o) => o.first === i || o.second === i) || inflatedBefore(i),
    );
    return {
      overlaps: overlaps.filter((o) => !apart.includes(o)),
      overAdmissions: overAdmissions.filter((o) => !admitted.includes(o)),
      stale: stale.filter((i) => !staleApart.includes(i)),
      uncovered: {
        count: apart.length + admitted.length,
        descriptions: [
          ...apart.map((o) => this.describeOverlap(o)),
          ...admitted.map(
            (o) => `OVER-ADMISSION on ${o.resource} at ${o.at.toFixed(4)}: ${o.holders.join(', ')}`,
          ),
          ...staleApart.map(
            (i) =>
              `STALE TOKEN on ${i.resource} (of an uncovered overlap, or below an uncovered grant's token): ${show(i)}`,
          ),
        ],
      },
    };
  }

  private describeOverlap(o: Overlap): string {
    const steps = this.stepNotes(o.first) + this.stepNotes(o.second);
    return `OVERLAP on ${o.first.resource}: ${show(o.first)} and ${show(o.second)}${steps}`;
  }

  /**
   * Whether `holder` was granted at `at` (true time) while the detection could not see a step (DESIGN §17, "Not
   * covered"): a node's clock stepped forward shortly before (within 2 × ttl: the longest a copy written before
   * the step can still stand for its holder), and the holder's instance had no sample of that node read
   * before the step — the first answer it got from the node was read after the step, its baseline — or the
   * node's steps since the instance's last sample before it add up to less than half of it (undone).
   */
  private uncoveredGrant(holder: string, at: number): boolean {
    const client = Number(holder.slice(1, holder.indexOf('#')));
    const reach = 2 * this.config.options.ttl!;
    return this.steps.some((step) => {
      if (!(step.stepMs > 0 && step.at < at && at <= step.at + reach)) return false;
      const connection = this.connections[client][step.node];
      const first = connection.firstSampleReadAt;
      if (first === undefined || first >= step.at) return true;
      // Also not covered (§17): the step mostly undone by the node's other steps between the instance's last
      // sample before it and the grant — the offsets then agree within a round trip.
      const last = Math.max(...connection.samplesReadAt.filter((readAt) => readAt < step.at));
      const net = this.steps
        .filter((other) => other.node === step.node && other.at > last && other.at < at)
        .reduce((sum, other) => sum + other.stepMs, 0);
      return Math.abs(net) < step.stepMs / 2;
    });
  }

  /** For a finding: the steps before `section`'s grant, and whether its instance had sampled the node and saw them. */
  private stepNotes(section: Interval): string {
    const client = Number(section.holder.slice(1, section.holder.indexOf('#')));
    const notes = this.steps
      .filter((step) => step.at < section.start)
      .map((step) => {
        const node = this.servers[step.node].name;
        const seen = this.stepsSeen[client].filter((s) => s.node === node).map((s) => s.at.toFixed(2));
        const first = this.connections[client][step.node].firstSampleReadAt;
        return (
          `${node} stepped ${step.stepMs.toFixed(2)} ms at ${step.at.toFixed(2)} ` +
          `(c${client}'s first sample read at ${first?.toFixed(2) ?? 'never'}, steps seen at [${seen.join(', ')}])`
        );
      });
    return notes.length > 0 ? `; ${notes.join('; ')}` : '';
  }

  private inject(fault: WorldConfig['faults'][number]): void {
    this.counters.faults++;
    const server = this.servers[fault.node];
    if (this.tracing) this.trace(`FAULT ${JSON.stringify(fault)}`);
    switch (fault.kind) {
      case 'crash':
        if (!server.up) return;
        server.crash();
        this.scheduler.after(fault.downFor, () => {
          server.restart();
          if (this.tracing) this.trace(`RESTART ${server.name} (empty)`);
        });
        return;
      case 'pause':
        server.pause();
        this.scheduler.after(fault.pausedFor, () => {
          server.resume();
          if (this.tracing) this.trace(`RESUME ${server.name}`);
        });
        return;
      case 'cut': {
        const connection = this.connections[fault.client][fault.node];
        connection.cutUntil = Math.max(connection.cutUntil, this.scheduler.now + fault.cutFor);
        return;
      }
      case 'step':
        // The clock steps whether the node is up, down or paused (it is the machine's clock).
        server.stepClock(fault.stepMs);
        this.counters.clockSteps++;
        this.steps.push({ at: this.scheduler.now, node: fault.node, stepMs: fault.stepMs });
        return;
    }
  }
}

function show(i: Interval): string {
  return `${i.holder} [${i.start.toFixed(4)}, ${i.end.toFixed(4)}] token=${i.token ?? '-'}`;
}
