import { InvalidArgumentError } from './errors';

/** Receives the core's few log lines. Pass `false` as `logger` to silence them. */
export interface RedlockLogger {
  warn(message: string): void;
  debug?(message: string): void;
}

/** Options of a {@link Redlock} instance; each also serves as the default for every call. */
export interface RedlockOptions {
  /** Time to live of a lock, in ms: how long it stays valid if never extended or released. Default 10 000. */
  ttl?: number;
  /**
   * Fraction of the ttl assumed lost to clock drift between this process and the nodes; the validity handed
   * out is `ttl − elapsed − (ttl × driftFactor + 2 ms)`. In [0, 0.5). Default 0.01.
   */
  driftFactor?: number;
  /** How long one node may take to answer before it counts as a "no" for that attempt, in ms. Default 50. */
  nodeTimeout?: number;
  /** How long `acquire()` keeps retrying a busy or unavailable lock, in ms. 0 = one attempt. Default 5 000. */
  wait?: number;
  /** The first retry delay, in ms; later ones grow ×5 up to `maxRetryDelay`, each with ±50 % jitter. Default 10. */
  retryDelay?: number;
  /** The largest delay between two attempts, in ms. Default 200. */
  maxRetryDelay?: number;
  /** Prefix of every key the library writes, keeping locks apart from data keys. Default `'redlock:'`. */
  keyPrefix?: string;
  /** Where warnings go (e.g. an even number of nodes). Default: `console.warn`. `false` silences them. */
  logger?: RedlockLogger | false;
}

/** Per-call options of `acquire()`, `tryAcquire()` and `using()`; unset ones come from the instance. */
export interface AcquireOptions {
  /** Time to live of this lock, in ms. */
  ttl?: number;
  /** How long to keep retrying, in ms (ignored by `tryAcquire()`, which makes one attempt). */
  wait?: number;
}

/** The instance options after defaults were applied and everything was validated. */
export type ResolvedOptions = Readonly<Required<Omit<RedlockOptions, 'logger'>>> & {
  readonly logger: RedlockLogger | undefined;
};

/** The defaults, documented once. */
export const DEFAULT_OPTIONS = Object.freeze({
  ttl: 10_000,
  driftFactor: 0.01,
  nodeTimeout: 50,
  wait: 5_000,
  retryDelay: 10,
  maxRetryDelay: 200,
  keyPrefix: 'redlock:',
});

const consoleLogger: RedlockLogger = { warn: (message) => console.warn(`[redlock] ${message}`) };

/** Applies the defaults and validates; throws {@link InvalidArgumentError} naming the option and the fix. */
export function resolveOptions(options: RedlockOptions = {}): ResolvedOptions {
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError(`options must be an object, got ${describe(options)}.`);
  }
  rejectUnknownKeys(options, INSTANCE_OPTION_KEYS, 'Redlock option');
  const resolved = { ...DEFAULT_OPTIONS, ...withoutUndefined(options) };
  validateTtl(resolved.ttl, 'ttl');
  const { driftFactor } = resolved;
  if (typeof driftFactor !== 'number' || !(driftFactor >= 0 && driftFactor < 0.5)) {
    throw new InvalidArgumentError(
      `driftFactor must be a number in [0, 0.5), got ${describe(driftFactor)}. The usual value is 0.01.`,
    );
  }
  validatePositiveInteger(resolved.nodeTimeout, 'nodeTimeout');
  validateWait(resolved.wait, 'wait');
  validateNonNegativeInteger(resolved.retryDelay, 'retryDelay');
  validateNonNegativeInteger(resolved.maxRetryDelay, 'maxRetryDelay');
  if (resolved.maxRetryDelay < resolved.retryDelay) {
    throw new InvalidArgumentError(
      `maxRetryDelay (${resolved.maxRetryDelay}) must not be smaller than retryDelay (${resolved.retryDelay}).`,
    );
  }
  if (typeof resolved.keyPrefix !== 'string') {
    throw new InvalidArgumentError(`keyPrefix must be a string, got ${describe(resolved.keyPrefix)}.`);
  }
  const logger = options.logger === false ? undefined : (options.logger ?? consoleLogger);
  if (logger !== undefined && typeof logger.warn !== 'function') {
    throw new InvalidArgumentError('logger must be false or an object with a warn(message) method.');
  }
  return Object.freeze({ ...resolved, logger });
}

/** Validates per-call options against the instance's; returns the effective ttl and wait. */
export function resolveAcquireOptions(
  options: AcquireOptions | undefined,
  defaults: ResolvedOptions,
): { ttl: number; wait: number } {
  if (options === undefined) return defaults;
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError(`acquire options must be an object, got ${describe(options)}.`);
  }
  rejectUnknownKeys(options, ACQUIRE_OPTION_KEYS, 'acquire option');
  const ttl = options.ttl ?? defaults.ttl;
  const wait = options.wait ?? defaults.wait;
  validateTtl(ttl, 'ttl');
  validateWait(wait, 'wait');
  return { ttl, wait };
}

/** ttl: a positive safe integer of ms, long enough to leave some validity after the drift allowance. */
export function validateTtl(value: unknown, name: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidArgumentError(
      `${name} must be a positive whole number of milliseconds, got ${describe(value)}. Example: ${name}: 10000.`,
    );
  }
  if (value < 10) {
    throw new InvalidArgumentError(
      `${name} of ${value} ms is too short to leave any validity after the drift allowance; use at least 10 ms.`,
    );
  }
}

function validateWait(value: unknown, name: string): void {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new InvalidArgumentError(
      `${name} must be a number of milliseconds ≥ 0 (0 = a single attempt), got ${describe(value)}.`,
    );
  }
}

function validatePositiveInteger(value: unknown, name: string): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidArgumentError(
      `${name} must be a positive whole number of milliseconds, got ${describe(value)}.`,
    );
  }
}

function validateNonNegativeInteger(value: unknown, name: string): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(
      `${name} must be a whole number of milliseconds ≥ 0, got ${describe(value)}.`,
    );
  }
}

const INSTANCE_OPTION_KEYS: ReadonlySet<string> = new Set([...Object.keys(DEFAULT_OPTIONS), 'logger']);
const ACQUIRE_OPTION_KEYS: ReadonlySet<string> = new Set(['ttl', 'wait']);

/** A misspelt option would otherwise be ignored silently and the default used instead. */
export function rejectUnknownKeys(object: object, known: ReadonlySet<string>, what: string): void {
  for (const key of Object.keys(object)) {
    if (!known.has(key)) {
      throw new InvalidArgumentError(`Unknown ${what} "${key}". Known ones: ${[...known].join(', ')}.`);
    }
  }
}

function withoutUndefined<T extends object>(object: T): Partial<T> {
  const copy: Partial<T> = {};
  for (const [key, value] of Object.entries(object)) {
    if (value !== undefined && key !== 'logger') (copy as Record<string, unknown>)[key] = value;
  }
  return copy;
}

/** A short description of a bad value for messages: `"abc" (string)`, `-1`, `undefined`. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return `${JSON.stringify(value)} (a string)`;
  if (typeof value === 'number' || typeof value === 'boolean' || value === undefined || value === null) {
    return String(value);
  }
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
