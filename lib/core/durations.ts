import { InvalidArgumentError } from './errors';
import { describe, durationOutOfRange, durationTooLong } from './messages';

/**
 * The longest delay a Node timer can wait: 2³¹ − 1 ms (about 24.8 days). Node fires a longer one after
 * 1 ms, so every duration the library takes is refused above it.
 */
export const MAX_DURATION = 2_147_483_647;

/**
 * Refuses a duration above {@link MAX_DURATION}, naming the option. `Infinity` is let through only when
 * `infiniteOk` (for `wait`: no limit, and no timer is ever armed with it).
 */
export function refuseTooLong(value: number, name: string, infiniteOk = false): void {
  if (value > MAX_DURATION && !(infiniteOk && value === Infinity)) {
    throw new InvalidArgumentError(durationTooLong(name, value, infiniteOk));
  }
}

/**
 * A duration argument: a whole number of ms in [`min`, {@link MAX_DURATION}]. Throws
 * {@link InvalidArgumentError} naming `name`, the range, and what was given.
 */
export function validateDuration(value: unknown, name: string, min: number): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_DURATION) {
    throw new InvalidArgumentError(durationOutOfRange(name, min, describe(value)));
  }
}
