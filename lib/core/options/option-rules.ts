import { MAX_TTL, durationProblem, validateDuration } from '../durations';
import { InvalidArgumentError } from '../errors';
import { describe, braceInPrefix, textHint, unreadableLogger } from '../messages';

/**
 * The rule of each option's value (docs/DESIGN.md §11): every wrong value — wrong type, NaN, Infinity where
 * it is no budget, negative, fractional, too large, text that looks like a number or a boolean, null, an
 * array, a Proxy — is refused with an {@link InvalidArgumentError} naming the option, the rule, what was
 * given and the fix (a default, an example, a conversion); never a TypeError from further in.
 */

/** The longest owner label: it is written with every lock, on every node. */
export const MAX_OWNER_LABEL = 100;

/** The most permits a semaphore may have: an acquisition may try every one of them in turn. */
export const MAX_PERMITS = 1_000;

/** Where a call's setting comes from when left out: shown as the fix. */
export type Fallback = string | number | boolean;

/** ttl: a positive whole number of ms, long enough to leave some validity after the drift allowance. */
export function validateTtl(value: unknown, name: string): asserts value is number {
  const problem = durationProblem(value, name, 1, false, MAX_TTL);
  if (problem !== undefined) throw new InvalidArgumentError(`${problem} Example: ${name}: 10000.`);
  if ((value as number) < 10) {
    throw new InvalidArgumentError(
      `${name} of ${value as number} ms is too short to leave any validity after the drift allowance; use at least 10 ms.`,
    );
  }
}

/** A duration option (docs/DESIGN.md §11), its default named as the fix. */
export function validateDurationOption(
  value: unknown,
  name: string,
  min: number,
  fallback: Fallback,
  infinite = false,
): asserts value is number {
  validateDuration(value, name, min, infinite, `Default: ${show(fallback)}.`);
}

/** A boolean option, named in the error (with its default, where it has one). */
export function validateBoolean(value: unknown, name: string, fallback?: boolean): asserts value is boolean {
  if (typeof value !== 'boolean') {
    throw new InvalidArgumentError(
      `${name} must be true or false, got ${describe(value)}.${textHint(value, 'boolean')}` +
        (fallback === undefined ? '' : ` Default: ${fallback}.`),
    );
  }
}

export function validateOnLockLost(value: unknown, fallback: Fallback): asserts value is 'throw' | 'warn' {
  if (value !== 'throw' && value !== 'warn') {
    throw new InvalidArgumentError(
      `onLockLost must be 'throw' or 'warn', got ${describe(value)}. Default: ${show(fallback)}.`,
    );
  }
}

export function validateClientKind(
  value: unknown,
  fallback: Fallback,
): asserts value is 'ioredis' | 'node-redis' {
  if (value !== 'ioredis' && value !== 'node-redis') {
    throw new InvalidArgumentError(
      `client must be 'ioredis' or 'node-redis' (the Redis client created for URLs and option objects), got ` +
        `${describe(value)}. Default: ${show(fallback)}. Clients passed in as nodes are used as they are.`,
    );
  }
}

export function validateDriftFactor(value: unknown): asserts value is number {
  if (typeof value !== 'number' || !(value >= 0 && value < 0.5)) {
    throw new InvalidArgumentError(
      `driftFactor must be a number in [0, 0.5), got ${describe(value)}. The usual value is 0.01.` +
        textHint(value, 'number'),
    );
  }
}

export function validateRetryDelays(retryDelay: number, maxRetryDelay: number): void {
  if (maxRetryDelay < retryDelay) {
    throw new InvalidArgumentError(
      `maxRetryDelay (${maxRetryDelay}) must not be smaller than retryDelay (${retryDelay}): raise ` +
        'maxRetryDelay or lower retryDelay (defaults: retryDelay 10, maxRetryDelay 200).',
    );
  }
}

export function validateRestartGuard(value: unknown): asserts value is boolean | number {
  if (typeof value === 'boolean') return;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) {
    validateDurationOption(value, 'restartGuard', 0, true);
    return;
  }
  throw new InvalidArgumentError(
    `restartGuard must be true, false, or a window in whole milliseconds ≥ 0, got ${describe(value)}.` +
      `${textHint(value, 'number') || textHint(value, 'boolean')} Default: true (a window of the largest ttl); ` +
      'set a number of ms to cover the longest ttl any of your services uses.',
  );
}

export function validateKeyPrefix(value: unknown): asserts value is string {
  if (typeof value !== 'string') {
    throw new InvalidArgumentError(
      `keyPrefix must be a string (the start of every key the library writes), got ${describe(value)}. ` +
        "Default: 'redlock:'.",
    );
  }
  if (/[{}]/.test(value)) throw new InvalidArgumentError(braceInPrefix(value));
}

export function validateOwnerLabel(owner: unknown): asserts owner is string {
  if (
    typeof owner !== 'string' ||
    owner.length === 0 ||
    owner.length > MAX_OWNER_LABEL ||
    /[\x00-\x1f\x7f]/.test(owner)
  ) {
    throw new InvalidArgumentError(
      `owner must be a label of 1 to ${MAX_OWNER_LABEL} printable characters (no line breaks), got ` +
        `${describe(owner)}. It names this instance in inspect() and holders(); the default is <hostname>:<pid>.`,
    );
  }
}

export function validateMaxWaiting(value: unknown): asserts value is number {
  if (value === Infinity || (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1)) return;
  throw new InvalidArgumentError(
    `maxWaiting must be a whole number ≥ 1 (how many callers of this instance may wait for the same resources ` +
      `at once) or Infinity, got ${describe(value)}.${textHint(value, 'number')} Example: maxWaiting: 50; leave ` +
      'it out for no limit.',
  );
}

export function validatePermits(value: unknown): asserts value is number | undefined {
  if (
    value !== undefined &&
    !(typeof value === 'number' && Number.isSafeInteger(value) && value >= 1 && value <= MAX_PERMITS)
  ) {
    throw new InvalidArgumentError(
      `permits must be a whole number from 1 to ${MAX_PERMITS} (at most that many holders at once), got ` +
        `${describe(value)}.${textHint(value, 'number')} Example: permits: 5; leave it out for an exclusive lock.`,
    );
  }
}

/** A call's `fair`: a boolean, and only for an exclusive lock or a writer. */
export function validateFair(value: unknown, permits: number | undefined, mode: 'read' | 'write'): void {
  validateBoolean(value, 'fair', false);
  if (value !== true) return;
  if (permits !== undefined || mode === 'read') {
    throw new InvalidArgumentError(
      `fair: true orders exclusive locks and writers; ${permits !== undefined ? 'permits' : "mode: 'read'"} ` +
        'are not ordered (readers already let a waiting writer go first). Leave fair out for this call.',
    );
  }
}

export function validateMode(value: unknown, permits: number | undefined): asserts value is 'read' | 'write' {
  if (value !== 'read' && value !== 'write') {
    throw new InvalidArgumentError(
      `mode must be 'read' or 'write', got ${describe(value)}. Default: 'write'.`,
    );
  }
  if (value === 'read' && permits !== undefined) {
    throw new InvalidArgumentError(
      `mode: 'read' and permits cannot be combined: a semaphore's permits are exclusive locks. Use one or the other.`,
    );
  }
}

export function validateSignal(value: unknown): asserts value is AbortSignal | undefined {
  if (value !== undefined && !isAbortSignal(value)) {
    throw new InvalidArgumentError(
      `signal must be an AbortSignal, got ${describe(value)}. Pass controller.signal of an AbortController ` +
        '(or AbortSignal.timeout(ms)).',
    );
  }
}

/**
 * A real AbortSignal: `instanceof` alone passes a Proxy around one (or an object made from its prototype),
 * whose `aborted` then throws inside the library; the getter's own brand check tells them apart. A Proxy
 * whose traps throw is no signal either.
 */
function isAbortSignal(value: unknown): value is AbortSignal {
  try {
    ABORTED_GETTER.call(value);
    return true;
  } catch {
    return false;
  }
}

const ABORTED_GETTER = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!;

/**
 * A logger object's `warn` (a function, or `refuse`) and `debug` (unchecked), each read once: a getter or Proxy
 * trap that throws is refused here (`unreadable`), not at a warning. The core's and the Nest module's loggers
 * both read theirs through it.
 */
export function loggerMethods(
  logger: unknown,
  refuse: (got: string) => Error,
  unreadable: (error: unknown) => Error,
): { warn: Function; debug: unknown } {
  if (logger === null || typeof logger !== 'object') throw refuse(describe(logger));
  let warn: unknown;
  let debug: unknown;
  try {
    ({ warn, debug } = logger as Record<string, unknown>);
  } catch (error) {
    throw unreadable(error);
  }
  if (typeof warn !== 'function') throw refuse(`an object whose warn is ${describe(warn)}`);
  return { warn, debug };
}

/** The logger's warn and debug, read once and called on the object given (`this`); `undefined`: silent. */
export function loggerOf(
  logger: unknown,
  fallback: { warn(message: string): void },
): { warn(message: string): void; debug?(message: string): void } | undefined {
  if (logger === false) return undefined;
  if (logger === undefined) return fallback;
  const refuse = (got: string) =>
    new InvalidArgumentError(
      `logger must be false or an object with a warn(message) method (and optionally debug(message)), got ${got}. ` +
        'Leave it out for console.warn.',
    );
  const { warn, debug } = loggerMethods(
    logger,
    refuse,
    (error) => new InvalidArgumentError(unreadableLogger(error)),
  );
  if (debug !== undefined && typeof debug !== 'function') {
    throw refuse(`an object whose debug is ${describe(debug)}`);
  }
  const call = (method: Function) => (message: string) => void Reflect.apply(method, logger, [message]);
  return { warn: call(warn), debug: debug === undefined ? undefined : call(debug as Function) };
}

function show(value: Fallback): string {
  return typeof value === 'string' ? `'${value}'` : String(value);
}
