import { createRequire } from 'node:module';

/**
 * The schedule of a method decorated with `@Cron`, `@Interval` or `@Timeout` from `@nestjs/schedule`, read
 * from the metadata those decorators put on the method (no import of the package: it is an optional peer).
 * A scheduled run keeps its lock until shortly before the next tick (docs/DESIGN.md §10), so instances
 * whose timers fire later for the same tick find it taken and skip.
 */
export interface TickSchedule {
  /** `cron '*\/10 * * * * *'`, `interval 1000 ms`, `timeout 5000 ms`: for messages. */
  readonly description: string;
  /**
   * The default `wait` of a tick, ms: timers of several instances can fire in the same millisecond and split
   * the votes so that nobody wins; a short retry settles it (well inside the margin before the next tick).
   */
  readonly wait: number;
  /**
   * The wall-clock time (epoch ms) until which a run that fired at `firedAt` and returned at `endedAt` keeps
   * its lock: the margin before the first tick after both the served tick and `endedAt`. At or before
   * `endedAt` when nothing is worth keeping.
   */
  holdUntil(firedAt: number, endedAt: number): number;
}

/** The metadata keys of @nestjs/schedule (its schedule.constants). */
const CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';
const INTERVAL_OPTIONS = 'SCHEDULE_INTERVAL_OPTIONS';
const TIMEOUT_OPTIONS = 'SCHEDULE_TIMEOUT_OPTIONS';

/** How early a timer may fire and still serve the tick it was set for (Node timers can be a ms early). */
const EARLY_FIRE = 20;
/** The lock ends this long before the next tick: min(period / 4, MAX_MARGIN). */
const MAX_MARGIN = 1_000;
/** A one-off run (a `Date` as cron time) keeps its lock this long. */
const ONE_OFF_HOLD = 60_000;

/** The margin before the next tick: timers of instances whose clocks run ahead by less than it still run it. */
export function marginOf(period: number): number {
  return Math.min(MAX_MARGIN, period / 4);
}

/**
 * Split votes are retried for half the margin before the next tick (randomised, growing backoffs: many attempts
 * on a loaded host), never past the margin; a tick held by another instance ends at once (splits only).
 */
function waitFor(period: number): number {
  return Math.floor(marginOf(period) / 2);
}

/** The wait of a one-off run (a `Date` as cron time): half the largest margin. */
const ONE_OFF_WAIT = MAX_MARGIN / 2;

/** The schedule of `method`, or undefined when no @nestjs/schedule decorator is on it. */
export function scheduleOf(method: unknown): TickSchedule | undefined {
  if (typeof method !== 'function') return undefined;
  const cron = Reflect.getMetadata(CRON_OPTIONS, method) as CronMetadata | undefined;
  if (cron) return cronSchedule(cron);
  const interval = Reflect.getMetadata(INTERVAL_OPTIONS, method) as { timeout?: number } | undefined;
  if (interval && typeof interval.timeout === 'number') return periodic(interval.timeout, 'interval');
  const timeout = Reflect.getMetadata(TIMEOUT_OPTIONS, method) as { timeout?: number } | undefined;
  if (timeout && typeof timeout.timeout === 'number') return periodic(timeout.timeout, 'timeout');
  return undefined;
}

/**
 * `@Interval(p)` and `@Timeout(d)`: each instance starts its own timer at boot, so there is no schedule
 * shared by the instances. A tick is one period of the instance that ran it: its lock is kept until the
 * margin before one period after it fired (later periods when the run outlasted them).
 */
function periodic(period: number, kind: 'interval' | 'timeout'): TickSchedule {
  const margin = marginOf(period);
  return {
    description: `${kind} ${period} ms`,
    wait: waitFor(period),
    holdUntil(firedAt, endedAt) {
      let next = firedAt + period;
      if (endedAt >= next) next += Math.ceil((endedAt - next + 1) / period) * period;
      return next - margin;
    },
  };
}

interface CronMetadata {
  cronTime: unknown;
  timeZone?: string;
  utcOffset?: number | string;
}

interface CronTimeLike {
  getNextDateFrom(start: unknown, zone?: string): { toMillis(): number };
}

interface CronPackage {
  CronTime: new (source: unknown, timeZone?: string, utcOffset?: number | string) => CronTimeLike;
}

interface LuxonPackage {
  DateTime: { fromMillis(ms: number, options?: { zone?: string }): unknown };
}

/** `@Cron(expression, { timeZone | utcOffset })`: the ticks are the expression's, in its zone. */
function cronSchedule(metadata: CronMetadata): TickSchedule {
  const { cronTime, timeZone, utcOffset } = metadata;
  if (cronTime instanceof Date) {
    const at = cronTime.getTime();
    return {
      description: `cron at ${cronTime.toISOString()}`,
      wait: ONE_OFF_WAIT,
      holdUntil: (_firedAt, endedAt) => Math.max(at, endedAt) + ONE_OFF_HOLD,
    };
  }
  const { cron, luxon } = loadCron();
  const time = new cron.CronTime(cronTime, timeZone, utcOffset);
  const zone = timeZone ?? zoneOfOffset(utcOffset);
  const nextAfter = (ms: number) =>
    time.getNextDateFrom(luxon.DateTime.fromMillis(ms, zone ? { zone } : undefined), zone).toMillis();
  const now = Date.now();
  const first = nextAfter(now);
  return {
    description: `cron '${String(cronTime)}'`,
    wait: waitFor(nextAfter(first) - first),
    holdUntil(firedAt, endedAt) {
      // The tick after the one served (a timer that fired a few ms early serves the coming tick).
      let next = nextAfter(firedAt + EARLY_FIRE);
      if (endedAt >= next) next = nextAfter(endedAt);
      return next - marginOf(nextAfter(next) - next);
    },
  };
}

/** The zone luxon understands for cron's `utcOffset` (minutes, or a string of minutes). */
function zoneOfOffset(utcOffset: number | string | undefined): string | undefined {
  if (utcOffset === undefined) return undefined;
  const minutes = Number(utcOffset);
  const sign = minutes < 0 ? '-' : '+';
  const hours = String(Math.trunc(Math.abs(minutes) / 60)).padStart(2, '0');
  const rest = String(Math.abs(minutes) % 60).padStart(2, '0');
  return `UTC${sign}${hours}:${rest}`;
}

let loaded: { cron: CronPackage; luxon: LuxonPackage } | undefined;

/** `cron` and its `luxon`, resolved from where @nestjs/schedule finds them (strict package managers). */
function loadCron(): { cron: CronPackage; luxon: LuxonPackage } {
  if (loaded) return loaded;
  const fromSchedule = createRequire(require.resolve('@nestjs/schedule'));
  const cronPath = fromSchedule.resolve('cron');
  const cron = fromSchedule(cronPath) as CronPackage;
  const luxon = createRequire(cronPath)('luxon') as LuxonPackage;
  loaded = { cron, luxon };
  return loaded;
}
