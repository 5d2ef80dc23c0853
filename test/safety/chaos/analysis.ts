import {
  Interval,
  OverAdmission,
  Overlap,
  findExclusionViolations,
  findOverAdmissions,
  findStaleTokens,
} from '../checkers/intervals';
import type { FaultEvent, Lag, PhaseRun } from './cluster';
import type { FailureRecord, SectionRecord } from './protocol';

/** A time span on the cluster clock (ms since its base). */
export interface Span {
  readonly from: number;
  readonly to: number;
}

/** A fault window and what happened in it. */
export interface WindowOutcome extends Span {
  readonly kind: string;
  /** Nodes that were up, resumed, out of their restart-guard window and unimpaired on every link throughout. */
  readonly healthyNodes: number;
  /**
   * Clients that had a quorum of such nodes, counting only their own links, throughout the window, and whose
   * process was not stopped (SIGSTOP) in it.
   */
  readonly servedClients: number[];
  /** Sections that began in the window: all of them, and those of the served clients. */
  readonly successes: number;
  readonly servedSuccesses: number;
  /** Served clients without a single section that began in the window (contention can do this). */
  readonly idleClients: number[];
  /** The most any one process (the parent with the proxies, or a client) was held up in the window, in all. */
  readonly lagMs: number;
  /** The longest single event-loop delay in the window. */
  readonly maxLagMs: number;
  /**
   * The host was starved: some process stalled longer than {@link STARVED}.maxLagMs at once, or for more
   * than {@link STARVED}.share of the window. Node answers then miss their timeout for reasons no lock
   * can help, so the window does not count for liveness (it still counts for safety).
   */
  readonly starved: boolean;
}

export interface PhaseAnalysis {
  readonly sections: SectionRecord[];
  readonly failures: FailureRecord[];
  /** Sections that overlapped where at least one was a writer (each permit of a semaphore counts apart). */
  readonly overlaps: Overlap[];
  /** Moments at which a semaphore had more holders than permits. */
  readonly overAdmissions: OverAdmission[];
  readonly staleTokens: Interval[];
  /** Locks handed out with no validity left (`remainingTime` ≤ 0 when the section began). */
  readonly expiredGrants: SectionRecord[];
  /** Sections whose work ran past the validity deadline (a slow client, not a lock failure; clipped). */
  readonly overruns: number;
  readonly windows: WindowOutcome[];
  /** Windows with at least one served client, on a host that was not starved, where none of them acquired. */
  readonly stalledWindows: WindowOutcome[];
  /** Spans during which fewer than a quorum of nodes were running and resumed. */
  readonly noQuorum: Span[];
  /** Acquisitions that began and completed entirely inside such a span. */
  readonly acquiredWithoutQuorum: SectionRecord[];
  readonly faults: number;
  readonly operations: number;
  readonly clientLogs: string[];
}

export interface AnalysisOptions {
  readonly nodeCount: number;
  readonly quorum: number;
  /** The restart-guard window: a restarted node refuses at least this long after it started. */
  readonly guardMs: number;
  /**
   * Use the interval a correct client may claim: [start, min(end, deadline)]. Off for naive clients, whose
   * whole sections count.
   */
  readonly clip: boolean;
  /** The semaphores' permits by resource (the phase's `permits`). */
  readonly permits?: Readonly<Record<string, number>>;
}

/**
 * How long after a fault ends a node still counts as impaired: after a start, the guard window plus a second
 * (the guard reads whole seconds of uptime) plus reconnecting; after a heal, the client's reconnect backoff
 * (at most a second); after a pause or latency, a moment.
 */
const SETTLE = { started: 2_500, healed: 1_500, resumed: 200, fast: 200 };

/** When a window's host counts as starved (see {@link WindowOutcome.starved}). */
export const STARVED = { maxLagMs: 100, share: 0.2 };

export function analyse(run: PhaseRun, options: AnalysisOptions): PhaseAnalysis {
  const sections = run.reports.flatMap((report) => report.sections);
  const failures = run.reports.flatMap((report) => report.failures);
  const intervals = intervalsOf(sections, options.clip);
  const overruns = sections.filter((section) => section.end > section.deadline).length;
  const impairments = impairmentsOf(run.events, options);
  const clients = run.reports.map((_, client) => client);
  // A client stopped by SIGSTOP reports its stop as a lag when it resumes: that is the fault, not a starved host.
  const lags = run.lags.filter(
    (lag) =>
      lag.client === undefined || !stoppedIn(run.events, { from: lag.t - lag.ms, to: lag.t }, lag.client),
  );
  const windows = windowsOf(run).map((window) => {
    const served = clients.filter(
      (client) =>
        !stoppedIn(run.events, window, client) &&
        countHealthy(impairments, window, options.nodeCount, client) >= options.quorum,
    );
    const inWindow = sections.filter((s) => s.start >= window.from && s.start < window.to);
    const busy = new Set(inWindow.map((s) => s.client));
    return {
      ...window,
      healthyNodes: countHealthy(impairments, window, options.nodeCount, -1),
      servedClients: served,
      successes: inWindow.length,
      servedSuccesses: inWindow.filter((s) => served.includes(s.client)).length,
      idleClients: served.filter((client) => !busy.has(client)),
      ...lagIn(lags, window),
    };
  });
  const noQuorum = noQuorumSpans(run.events, options);
  return {
    sections,
    failures,
    overlaps: findExclusionViolations(intervals),
    overAdmissions: overAdmissionsOf(sections, options.clip, options.permits),
    staleTokens: findStaleTokens(intervals),
    expiredGrants: sections.filter((s) => s.remainingAtStart <= 0),
    overruns,
    windows,
    stalledWindows: windows.filter(
      (w) => w.servedClients.length > 0 && !w.starved && w.servedSuccesses === 0,
    ),
    noQuorum,
    acquiredWithoutQuorum: sections.filter((s) =>
      noQuorum.some((span) => s.acqStart >= span.from && s.start <= span.to),
    ),
    faults: countFaults(run.events),
    operations:
      sections.length +
      failures.length +
      run.reports.reduce((sum, report) => sum + (report.stats?.pollAttempts ?? 0), 0),
    clientLogs: run.reports.flatMap((report, c) => report.logs.map((log) => `client ${c}: ${log}`)),
  };
}

/**
 * The sections as intervals for the checkers. With `clip`, a section counts only up to its validity deadline
 * (what a correct client may claim); sections with no valid time at all did nothing under the lock.
 */
export function intervalsOf(sections: readonly SectionRecord[], clip: boolean): Interval[] {
  const intervals: Interval[] = [];
  sections.forEach((section, i) => {
    const end = clip ? Math.min(section.end, section.deadline) : section.end;
    if (end <= section.start) return;
    // A permit of a semaphore is a lock of its own: exclusive, with its own token order.
    const resource =
      section.permit === undefined ? section.resource : `${section.resource}#${section.permit}`;
    intervals.push({
      resource,
      holder: `client-${section.client}#${i}`,
      start: section.start,
      end,
      token: section.token,
      mode: section.mode,
    });
  });
  return intervals;
}

/**
 * Per semaphore resource (sections holding a permit), moments with more holders than its permits (`limits`,
 * or — where not given — one more than the largest permit seen).
 */
function overAdmissionsOf(
  sections: readonly SectionRecord[],
  clip: boolean,
  limits: Readonly<Record<string, number>> = {},
): OverAdmission[] {
  const byResource = new Map<string, SectionRecord[]>();
  for (const section of sections) {
    if (section.permit === undefined) continue;
    byResource.set(section.resource, [...(byResource.get(section.resource) ?? []), section]);
  }
  return [...byResource].flatMap(([resource, list]) => {
    const limit = limits[resource] ?? Math.max(...list.map((s) => s.permit!)) + 1;
    return findOverAdmissions(
      intervalsOf(
        list.map((s) => ({ ...s, permit: undefined })),
        clip,
      ),
      limit,
    );
  });
}

/**
 * Faults injected: kills, pauses (of nodes and of client processes), cuts and latency settings (heals, resumes
 * and restarts are their other halves).
 */
export function countFaults(events: readonly FaultEvent[]): number {
  const faults = new Set<FaultEvent['kind']>(['kill', 'pause', 'client-pause', 'cut']);
  return events.filter((e) => faults.has(e.kind) || (e.kind === 'latency' && e.ms! > 0)).length;
}

/** Whether `client`'s process was stopped (SIGSTOP) at some moment of `window`. */
function stoppedIn(events: readonly FaultEvent[], window: Span, client: number): boolean {
  let since: number | undefined;
  for (const e of events) {
    if (e.client !== client) continue;
    if (e.kind === 'client-pause') since = e.t;
    else if (e.kind === 'client-resume' && since !== undefined) {
      if (since < window.to && e.t > window.from) return true;
      since = undefined;
    }
  }
  return since !== undefined && since < window.to;
}

function lagIn(lags: readonly Lag[], window: Span): { lagMs: number; maxLagMs: number; starved: boolean } {
  const bySource = new Map<number, number>();
  let maxLagMs = 0;
  for (const lag of lags) {
    if (lag.t < window.from || lag.t - lag.ms > window.to) continue;
    const source = lag.client ?? -1;
    bySource.set(source, (bySource.get(source) ?? 0) + lag.ms);
    maxLagMs = Math.max(maxLagMs, lag.ms);
  }
  const lagMs = Math.max(0, ...bySource.values());
  const starved = maxLagMs > STARVED.maxLagMs || lagMs > STARVED.share * (window.to - window.from);
  return { lagMs, maxLagMs, starved };
}

function windowsOf(run: PhaseRun): (Span & { kind: string })[] {
  const starts = run.events.filter((e) => e.kind === 'window');
  return starts.map((e, i) => ({
    kind: e.note ?? '?',
    from: e.t,
    to: i + 1 < starts.length ? starts[i + 1].t : run.to,
  }));
}

/** A span during which a node could not be counted on: by anyone, or (`client` set) by one client. */
interface Impairment extends Span {
  readonly node: number;
  readonly client?: number;
}

/** The impairments the fault log describes, each widened by the time it takes to recover from it. */
function impairmentsOf(events: readonly FaultEvent[], options: AnalysisOptions): Impairment[] {
  const spans: Impairment[] = [];
  const open = new Map<string, { from: number; node: number; client?: number }>();
  const begin = (key: string, e: FaultEvent, client?: number) => {
    if (!open.has(key)) open.set(key, { from: e.t, node: e.node!, client });
  };
  const finish = (key: string, to: number) => {
    const span = open.get(key);
    if (span === undefined) return;
    open.delete(key);
    spans.push({ ...span, to });
  };
  for (const e of events) {
    const link = `${e.client}:${e.node}`;
    switch (e.kind) {
      case 'kill':
        begin(`down:${e.node}`, e);
        break;
      case 'started':
        finish(`down:${e.node}`, e.t + options.guardMs + SETTLE.started);
        break;
      case 'pause':
        begin(`paused:${e.node}`, e);
        break;
      case 'resume':
        finish(`paused:${e.node}`, e.t + SETTLE.resumed);
        break;
      case 'cut':
        begin(`cut:${link}`, e, e.client);
        break;
      case 'heal':
        finish(`cut:${link}`, e.t + SETTLE.healed);
        break;
      case 'latency':
        if (e.ms! > 0) begin(`slow:${link}`, e, e.client);
        else finish(`slow:${link}`, e.t + SETTLE.fast);
        break;
    }
  }
  for (const span of open.values()) spans.push({ ...span, to: Infinity });
  return spans;
}

/** How many nodes were unimpaired throughout `window`, for everyone (`client` undefined) or for one client. */
function countHealthy(
  impairments: readonly Impairment[],
  window: Span,
  nodeCount: number,
  client?: number,
): number {
  let healthy = 0;
  for (let node = 0; node < nodeCount; node++) {
    const impaired = impairments.some(
      (span) =>
        span.node === node &&
        (span.client === undefined || span.client === client) &&
        span.from < window.to &&
        span.to > window.from,
    );
    if (!impaired) healthy++;
  }
  return healthy;
}

/** Spans with fewer than a quorum of nodes running and resumed (a starting node already counts as up). */
function noQuorumSpans(events: readonly FaultEvent[], options: AnalysisOptions): Span[] {
  const down = new Set<string>();
  const spans: Span[] = [];
  let since: number | undefined;
  for (const e of events) {
    if (e.kind === 'kill') down.add(`k${e.node}`);
    else if (e.kind === 'starting') down.delete(`k${e.node}`);
    else if (e.kind === 'pause') down.add(`p${e.node}`);
    else if (e.kind === 'resume') down.delete(`p${e.node}`);
    else continue;
    const up = options.nodeCount - new Set([...down].map((key) => key.slice(1))).size;
    if (up < options.quorum && since === undefined) since = e.t;
    else if (up >= options.quorum && since !== undefined) {
      spans.push({ from: since, to: e.t });
      since = undefined;
    }
  }
  return spans;
}
