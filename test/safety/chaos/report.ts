import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Overlap } from '../checkers/intervals';
import type { PhaseAnalysis } from './analysis';
import type { FaultEvent, PhaseRun } from './cluster';

/** The profile of a run: `short` in `npm test`, `long` with CHAOS_PROFILE=long. */
export interface ChaosProfile {
  readonly name: 'short' | 'long';
  /** Length of the main run, ms. */
  readonly mainMs: number;
  /** Length of the main run with the restart guard in its portable mode, ms. */
  readonly portableMs: number;
  /** Bare-quorum restart cycles of negative control 1: at least `min`, up to `max` until it finds something. */
  readonly guardControlCycles: { readonly min: number; readonly max: number };
  /** Length of negative control 2, ms: at least `min`, up to `max` until it finds something. */
  readonly validityControlMs: { readonly min: number; readonly max: number };
}

export function chaosProfile(): ChaosProfile {
  const name = process.env.CHAOS_PROFILE === 'long' ? 'long' : 'short';
  const mainMs = Number(process.env.CHAOS_MAIN_MS) || (name === 'long' ? 600_000 : 25_000);
  const portableMs = Number(process.env.CHAOS_PORTABLE_MS) || (name === 'long' ? 120_000 : 8_000);
  return name === 'long'
    ? {
        name,
        mainMs,
        portableMs,
        guardControlCycles: { min: 6, max: 12 },
        validityControlMs: { min: 20_000, max: 40_000 },
      }
    : {
        name,
        mainMs,
        portableMs,
        // Each control stops as soon as its checker has found a violation (after `min`), else goes on to `max`.
        guardControlCycles: { min: 1, max: 6 },
        validityControlMs: { min: 2_000, max: 15_000 },
      };
}

/** Overlapping holders, out-of-order tokens, fenced writes turned down: what the negative controls count. */
export function safetyViolations(run: PhaseRun, analysis: PhaseAnalysis): number {
  return (
    analysis.overlaps.length +
    analysis.overAdmissions.length +
    analysis.staleTokens.length +
    run.rejections.length
  );
}

/** Everything the main run asserts to be 0: safety, expired grants, grants without quorum, stalled windows. */
export function violations(run: PhaseRun, analysis: PhaseAnalysis): number {
  return (
    safetyViolations(run, analysis) +
    analysis.expiredGrants.length +
    analysis.acquiredWithoutQuorum.length +
    analysis.stalledWindows.length
  );
}

/** One line per phase: what ran, what was injected, what was found. */
export function phaseLine(run: PhaseRun, analysis: PhaseAnalysis): string {
  const seconds = ((run.to - run.from) / 1000).toFixed(1);
  const healthy = analysis.windows.filter((w) => w.servedClients.length > 0);
  const starved = healthy.filter((w) => w.starved).length;
  const clientWindows = analysis.windows.reduce((sum, w) => sum + w.servedClients.length, 0);
  const idle = analysis.windows.reduce((sum, w) => sum + w.idleClients.length, 0);
  return (
    `${run.name}: ${seconds} s, ${analysis.operations} operations (${analysis.sections.length} sections: ` +
    `${analysis.sections.filter((s) => s.mode === 'read').length} read, ` +
    `${analysis.sections.filter((s) => s.permit !== undefined).length} on permits; ` +
    `${analysis.failures.length} failed acquisitions, ${run.fencedWrites} fenced writes), ` +
    `${analysis.faults} faults in ${analysis.windows.length} windows (${healthy.length} with a healthy quorum ` +
    `for some client, ${starved} of them on a starved host; ${idle} of ${clientWindows} served client-windows idle; ` +
    `${analysis.noQuorum.length} spans without a quorum); violations ${violations(run, analysis)} ` +
    `[overlaps ${analysis.overlaps.length}, over-admissions ${analysis.overAdmissions.length}, ` +
    `stale tokens ${analysis.staleTokens.length}, ` +
    `fence rejections ${run.rejections.length}, expired grants ${analysis.expiredGrants.length}, ` +
    `acquired without quorum ${analysis.acquiredWithoutQuorum.length}, ` +
    `stalled healthy windows ${analysis.stalledWindows.length}]; overruns ${analysis.overruns}`
  );
}

/** A readable account of the first overlaps, with the faults logged around them. */
export function describeOverlaps(
  overlaps: readonly Overlap[],
  events: readonly FaultEvent[],
  max = 3,
): string {
  return overlaps
    .slice(0, max)
    .map(({ first, second }) => {
      const from = first.start - 2_500;
      const to = second.end + 500;
      const nearby = events
        .filter((e) => e.t >= from && e.t <= to)
        .map((e) => `    ${e.t.toFixed(1)} ${describeEvent(e)}`)
        .join('\n');
      return (
        `  ${first.resource}: ${first.holder} [${first.start.toFixed(1)}, ${first.end.toFixed(1)}] token ` +
        `${first.token} overlaps ${second.holder} [${second.start.toFixed(1)}, ${second.end.toFixed(1)}] token ` +
        `${second.token} by ${(Math.min(first.end, second.end) - second.start).toFixed(1)} ms\n` +
        `  faults around it:\n${nearby || '    (none)'}`
      );
    })
    .join('\n');
}

export function describeEvent(e: FaultEvent): string {
  const parts: string[] = [e.kind];
  if (e.node !== undefined) parts.push(`node ${e.node}`);
  if (e.client !== undefined) parts.push(`client ${e.client}`);
  if (e.ms !== undefined) parts.push(`${e.ms} ms`);
  if (e.note !== undefined) parts.push(e.note);
  return parts.join(' ');
}

const ONE_DAY = 24 * 3600 * 1000;

/**
 * Writes everything a phase recorded to a JSON file (to investigate a failure: sections, failures with the
 * votes of their last attempt, the fault log, event-loop lags); returns its path. Logs older than a day go.
 */
export function saveLog(seed: number, run: PhaseRun, analysis: PhaseAnalysis, extra: object = {}): string {
  const dir = path.join(os.tmpdir(), 'nestjs-redlock-chaos');
  fs.mkdirSync(dir, { recursive: true });
  for (const name of fs.readdirSync(dir)) {
    const old = path.join(dir, name);
    if (Date.now() - fs.statSync(old).mtimeMs > ONE_DAY) fs.rmSync(old, { force: true });
  }
  const file = path.join(dir, `seed-${seed}-${run.name}.json`);
  const { reports: _reports, ...rest } = run;
  fs.writeFileSync(
    file,
    JSON.stringify(
      {
        seed,
        ...extra,
        ...rest,
        sections: analysis.sections,
        failures: analysis.failures,
        waitings: run.reports.flatMap((report) => report.waitings),
        overlaps: analysis.overlaps,
        staleTokens: analysis.staleTokens,
        windows: analysis.windows,
        noQuorum: analysis.noQuorum,
        clientLogs: analysis.clientLogs,
      },
      null,
      1,
    ),
  );
  return file;
}
