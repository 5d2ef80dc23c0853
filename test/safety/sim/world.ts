import { RedlockCore } from '../../../lib/core';
import {
  Interval,
  findExclusionViolations,
  findOverAdmissions,
  findStaleTokens,
} from '../checkers/intervals';
import { ClientSink, OpStats, SimClient, emptyOpStats, runClient } from './client';
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
  /** Safety violations: overlapping sections, stale tokens. */
  readonly overlaps: number;
  readonly staleTokens: number;
  /** Everything else that must never happen: expired grants, unexpected errors, stuck clients, bad timers. */
  readonly anomalies: readonly string[];
  /** Human-readable descriptions of every violation and anomaly. */
  readonly findings: readonly string[];
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
  };
  readonly lines: string[] = [];
  readonly servers: VirtualServer[];
  private readonly stats = emptyOpStats();
  private readonly intervals: Interval[] = [];
  private readonly anomalies: string[] = [];
  private readonly owners = new Map<string, string>();
  private readonly clients: SimClient[] = [];
  private readonly connections: Connection[][] = [];
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

  start(): void {
    const { config, rng } = this;
    let connectionId = 0;
    config.clients.forEach((spec, id) => {
      const lateness = () => (rng.chance(spec.lateChance) ? rng.real(0, spec.lateMax) : 0);
      const clock = new DriftingClock(this.scheduler, spec.rate, spec.offset, lateness);
      const connections = this.servers.map(
        (server, node) =>
          new Connection(this, connectionId++, id, server, config.links[id][node], config.watch),
      );
      this.connections.push(connections);
      const redlock = new RedlockCore(connections, config.options, {
        clock,
        random: () => rng.next(),
        unsafeSkipValidityCheck: config.unsafeSkipValidityCheck,
        unsafeReuseOwner: config.unsafeReuseOwner,
      });
      this.clients.push({ id, redlock, clock, ops: spec.ops, connections });
    });
    for (const fault of config.faults) this.scheduler.at(fault.at, () => this.inject(fault));
    const sink: ClientSink = {
      context: this,
      stats: this.stats,
      checkGrants: !config.unsafeSkipValidityCheck,
      keepDeadlineOfFailedExtend: config.profile === 'short-extend-old-deadline',
      perNodeCount: config.profile === 'semaphore-per-node-count',
      section: (interval) => this.intervals.push(interval),
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
    const overAdmissions = findOverAdmissions(onPermits, SEMAPHORE_PERMITS);
    const overlaps = findExclusionViolations(locks);
    const stale = findStaleTokens(locks);
    const anomalies = [...this.anomalies];
    for (const client of this.clients) {
      if (client.clock.badDelays > 0)
        anomalies.push(`c${client.id}: ${client.clock.badDelays} timer(s) with a non-finite delay`);
    }
    const show = (i: Interval) =>
      `${i.holder} [${i.start.toFixed(4)}, ${i.end.toFixed(4)}] token=${i.token ?? '-'}`;
    const findings = [
      ...overlaps.map((o) => `OVERLAP on ${o.first.resource}: ${show(o.first)} and ${show(o.second)}`),
      ...stale.map((i) => `STALE TOKEN on ${i.resource}: ${show(i)}`),
      ...overAdmissions.map(
        (o) => `OVER-ADMISSION on ${o.resource} at ${o.at.toFixed(4)}: ${o.holders.join(', ')}`,
      ),
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
      anomalies,
      findings,
    };
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
    }
  }
}
