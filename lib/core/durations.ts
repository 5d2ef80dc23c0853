import { InvalidArgumentError } from './errors';
import { durationInvalid, durationTooLong } from './messages';

/**
 * The longest delay a Node timer can wait: 2³¹ − 1 ms (about 24.8 days). Node fires a longer one after
 * 1 ms, so every duration the library takes is refused above it.
 */
export const MAX_DURATION = 2_147_483_647;

/**
 * What is wrong with a duration argument, or undefined: every duration the library takes is a whole number of
 * ms from `min` to {@link MAX_DURATION} (docs/DESIGN.md §11), except a budget (`infinite`: `wait`), which may
 * also be fractional or `Infinity` (no limit; no timer is ever armed with it). The one rule behind every
 * duration check.
 */
export function durationProblem(
  value: unknown,
  name: string,
  min: number,
  infinite = false,
): string | undefined {
  if (infinite && value === Infinity) return undefined;
  // A budget (`wait`, the one duration that may be Infinity) may be fractional: `wait: ttl / 2` is common.
  const whole = infinite ? Number.isFinite(value) : Number.isSafeInteger(value);
  if (typeof value !== 'number' || !whole || value < min) {
    return durationInvalid(name, min, infinite, value);
  }
  if (value > MAX_DURATION) return durationTooLong(name, value, infinite);
  return undefined;
}

/** Throws {@link InvalidArgumentError} with {@link durationProblem}'s message, naming `name`. */
export function validateDuration(
  value: unknown,
  name: string,
  min: number,
  infinite = false,
): asserts value is number {
  const problem = durationProblem(value, name, min, infinite);
  if (problem !== undefined) throw new InvalidArgumentError(problem);
}
