import { InvalidArgumentError } from './errors';
import { durationInvalid, durationTooLong } from './messages';

/**
 * The longest delay a Node timer can wait: 2³¹ − 1 ms (about 24.8 days). Node fires a longer one after
 * 1 ms, so every duration the library takes is refused above it.
 */
export const MAX_DURATION = 2_147_483_647;

/**
 * The longest ttl: the largest whole number JavaScript keeps exact (2⁵³ − 1 ms, about 285,000 years). Redis
 * accepts any PX that does not overflow its clock, so node-redlock's "never expire during the test" idiom
 * (`Number.MAX_SAFE_INTEGER / 10`) is a valid ttl; the library's timers arm a delay that long in steps.
 */
export const MAX_TTL = Number.MAX_SAFE_INTEGER;

/**
 * What is wrong with a duration argument, or undefined: every duration the library takes is a whole number of
 * ms from `min` to {@link MAX_DURATION} (docs/DESIGN.md §11) — a ttl to {@link MAX_TTL} —, except a budget (`infinite`: `wait`), which may
 * also be fractional or `Infinity` (no limit; no timer is ever armed with it). The one rule behind every
 * duration check.
 */
export function durationProblem(
  value: unknown,
  name: string,
  min: number,
  infinite = false,
  max = MAX_DURATION,
): string | undefined {
  if (infinite && value === Infinity) return undefined;
  // A budget (`wait`, the one duration that may be Infinity) may be fractional: `wait: ttl / 2` is common.
  // Whole numbers beyond 2⁵³ are integers too: they are refused below as too long, not as fractions.
  const whole = infinite ? Number.isFinite(value) : Number.isInteger(value);
  if (typeof value !== 'number' || !whole || value < min) {
    return durationInvalid(name, min, infinite, value);
  }
  if (value > max) return durationTooLong(name, value, infinite, max);
  return undefined;
}

/**
 * Throws {@link InvalidArgumentError} with {@link durationProblem}'s message, naming `name`; `fix`, when given,
 * is appended (an option names its default there).
 */
export function validateDuration(
  value: unknown,
  name: string,
  min: number,
  infinite = false,
  fix?: string,
): asserts value is number {
  const problem = durationProblem(value, name, min, infinite);
  if (problem !== undefined)
    throw new InvalidArgumentError(fix === undefined ? problem : `${problem} ${fix}`);
}
