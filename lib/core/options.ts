import { hostname } from 'node:os';
import { MAX_TTL, durationProblem, validateDuration } from './durations';
import { InvalidArgumentError } from './errors';
import { describe, emptyHashTagPrefix, unreadableLogger } from './messages';
import { readOptions } from './option-object';

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
  /**
   * Fencing tokens: every lock carries a `fencingToken` that strictly increases across successive holders
   * of a resource. Costs one more round trip per acquisition. Default false.
   */
  fencing?: boolean;
  /**
   * Restart guard: a node refuses locks during its first `window` ms of uptime, so a node that restarted
   * empty cannot hand a lock still held elsewhere to a second owner. `true` = a window equal to the largest
   * of the instance's ttl and the call's ttl; a number = at least that many ms; `false` = off. Set it to the
   * largest ttl any of your services uses. Default true.
   */
  restartGuard?: boolean | number;
  /**
   * Inside `using()` (and `@Locked`), renew the lock while the work runs; when renewal fails, the lock's
   * `signal` aborts. Default true.
   */
  autoExtend?: boolean;
  /**
   * When work inside `using()` finishes after its lock was lost: `'throw'` rejects with `LockLostError`,
   * `'warn'` logs a warning and returns the work's result. Default `'throw'`.
   */
  onLockLost?: 'throw' | 'warn';
  /** Where warnings go (even node count, lost locks). Default: `console.warn`. `false` silences them. */
  logger?: RedlockLogger | false;
  /**
   * Who this instance is, as `inspect()` and `holders()` show it beside every lock it holds: up to 100
   * printable characters (no line breaks). Default `<hostname>:<pid>`. Only a label, stored in each lock's
   * owner value after its random part: releases and extensions are still decided by the whole value.
   */
  owner?: string;
}

/** Per-call options of `acquire()`, `tryAcquire()` and `using()`; unset ones come from the instance. */
export interface AcquireOptions {
  /** Time to live of this lock, in ms. */
  ttl?: number;
  /** How long to keep retrying, in ms (ignored by `tryAcquire()`, which makes one attempt). */
  wait?: number;
  /** Hand out a fencing token with this lock. */
  fencing?: boolean;
  /** Aborting stops waiting and retrying at once and removes any keys written so far. */
  signal?: AbortSignal;
  /**
   * A counting semaphore: at most `permits` holders of the resource at once across every instance (one
   * resource per call; a whole number from 1 to 1 000). Each permit is an exclusive lock of its own over the
   * quorum (`lock.permit` says which), so its safety is the mutex's. Every caller of one resource must pass the
   * same number: one that passes another gets an `InvalidArgumentError`. Default: none (an exclusive lock).
   */
  permits?: number;
  /**
   * A read-write lock: `'write'` (the default) holds the resource alone — no other writer and no reader;
   * `'read'` shares it with other readers and excludes writers. A writer that waits keeps new readers out,
   * so a stream of readers cannot starve it. Not with `permits`.
   */
  mode?: 'read' | 'write';
}

/** Per-call options of `using()`: those of `acquire()` plus what happens while the work runs. */
export interface UsingOptions extends AcquireOptions {
  /** Renew the lock while the work runs (default: the instance's `autoExtend`). */
  autoExtend?: boolean;
  /** What happens when the work finishes after the lock was lost (default: the instance's `onLockLost`). */
  onLockLost?: 'throw' | 'warn';
}

/** The effective settings of one call. */
export interface CallSettings {
  readonly ttl: number;
  readonly wait: number;
  readonly fencing: boolean;
  readonly guardWindow: number;
  readonly signal: AbortSignal | undefined;
  readonly autoExtend: boolean;
  readonly onLockLost: 'throw' | 'warn';
  /** A counting semaphore of this many permits, or undefined (an exclusive lock). */
  readonly permits: number | undefined;
  /** A writer (the default) or a reader. */
  readonly mode: 'read' | 'write';
}

/** The instance options after defaults were applied and everything was validated. */
export type ResolvedOptions = Readonly<Required<Omit<RedlockOptions, 'logger'>>> & {
  readonly logger: RedlockLogger | undefined;
};

/** The longest owner label: it is written with every lock, on every node. */
export const MAX_OWNER_LABEL = 100;

/** The defaults, documented once. */
export const DEFAULT_OPTIONS = Object.freeze({
  ttl: 10_000,
  driftFactor: 0.01,
  nodeTimeout: 50,
  wait: 5_000,
  retryDelay: 10,
  maxRetryDelay: 200,
  keyPrefix: 'redlock:',
  owner: defaultOwnerLabel(),
  fencing: false,
  restartGuard: true as boolean | number,
  autoExtend: true,
  onLockLost: 'throw' as 'throw' | 'warn',
});

const consoleLogger: RedlockLogger = { warn: (message) => console.warn(`[redlock] ${message}`) };

/** Applies the defaults and validates; throws {@link InvalidArgumentError} naming the option and the fix. */
export function resolveOptions(options: RedlockOptions = {}): ResolvedOptions {
  const { logger: givenLogger, ...given } = readOptions(options, REDLOCK_OPTIONS);
  const resolved: Record<keyof typeof DEFAULT_OPTIONS, unknown> = { ...DEFAULT_OPTIONS, ...given };
  const { ttl, driftFactor, nodeTimeout, wait, retryDelay, maxRetryDelay } = resolved;
  const { fencing, autoExtend, onLockLost, restartGuard, keyPrefix, owner } = resolved;
  validateTtl(ttl, 'ttl');
  if (typeof driftFactor !== 'number' || !(driftFactor >= 0 && driftFactor < 0.5)) {
    throw new InvalidArgumentError(
      `driftFactor must be a number in [0, 0.5), got ${describe(driftFactor)}. The usual value is 0.01.`,
    );
  }
  validateDuration(nodeTimeout, 'nodeTimeout', 1);
  validateDuration(wait, 'wait', 0, true);
  validateDuration(retryDelay, 'retryDelay', 0);
  validateDuration(maxRetryDelay, 'maxRetryDelay', 0);
  if (maxRetryDelay < retryDelay) {
    throw new InvalidArgumentError(
      `maxRetryDelay (${maxRetryDelay}) must not be smaller than retryDelay (${retryDelay}).`,
    );
  }
  validateBoolean(fencing, 'fencing');
  validateBoolean(autoExtend, 'autoExtend');
  validateOnLockLost(onLockLost);
  if (
    typeof restartGuard !== 'boolean' &&
    !(typeof restartGuard === 'number' && Number.isSafeInteger(restartGuard) && restartGuard >= 0)
  ) {
    throw new InvalidArgumentError(
      `restartGuard must be true, false, or a window in whole milliseconds ≥ 0, got ${describe(restartGuard)}.`,
    );
  }
  if (typeof restartGuard === 'number') validateDuration(restartGuard, 'restartGuard', 0);
  if (typeof keyPrefix !== 'string') {
    throw new InvalidArgumentError(`keyPrefix must be a string, got ${describe(keyPrefix)}.`);
  }
  const brace = keyPrefix.indexOf('{');
  if (brace >= 0 && keyPrefix[brace + 1] === '}') {
    throw new InvalidArgumentError(emptyHashTagPrefix(keyPrefix));
  }
  validateOwnerLabel(owner);
  return Object.freeze({
    ttl,
    driftFactor,
    nodeTimeout,
    wait,
    retryDelay,
    maxRetryDelay,
    fencing,
    autoExtend,
    onLockLost,
    restartGuard,
    keyPrefix,
    owner,
    logger: loggerOf(givenLogger),
  });
}

/**
 * The logger, its methods read once (a getter or Proxy trap that throws is refused here, not at the first
 * warning) and called on the object given, as `this`.
 */
function loggerOf(logger: unknown): RedlockLogger | undefined {
  if (logger === false) return undefined;
  if (logger === undefined) return consoleLogger;
  const refuse = (got: string) =>
    new InvalidArgumentError(
      `logger must be false or an object with a warn(message) method (and optionally debug(message)), got ${got}. ` +
        'Leave it out for console.warn.',
    );
  if (logger === null || typeof logger !== 'object') throw refuse(describe(logger));
  let warn: unknown;
  let debug: unknown;
  try {
    ({ warn, debug } = logger as Record<string, unknown>);
  } catch (error) {
    throw new InvalidArgumentError(unreadableLogger(error));
  }
  if (typeof warn !== 'function') throw refuse(`an object whose warn is ${describe(warn)}`);
  if (debug !== undefined && typeof debug !== 'function') {
    throw refuse(`an object whose debug is ${describe(debug)}`);
  }
  return {
    warn: (message) => void Reflect.apply(warn as RedlockLogger['warn'], logger, [message]),
    debug:
      debug === undefined
        ? undefined
        : (message) => void Reflect.apply(debug as RedlockLogger['warn'], logger, [message]),
  };
}

/** Validates per-call options against the instance's and returns the effective settings of the call. */
export function resolveCallOptions(
  options: UsingOptions | undefined,
  defaults: ResolvedOptions,
  known: ReadonlySet<string> = ACQUIRE_OPTION_KEYS,
): CallSettings {
  const given =
    options === undefined
      ? NO_OPTIONS
      : readOptions(options, { name: 'acquire options', option: 'acquire option', known });
  // Only undefined (or absent) means "the default": null is refused like any other wrong value.
  const or = <T>(value: unknown, fallback: T): unknown => (value === undefined ? fallback : value);
  const ttl = or(given.ttl, defaults.ttl);
  const wait = or(given.wait, defaults.wait);
  const fencing = or(given.fencing, defaults.fencing);
  const autoExtend = or(given.autoExtend, defaults.autoExtend);
  const onLockLost = or(given.onLockLost, defaults.onLockLost);
  validateTtl(ttl, 'ttl');
  validateDuration(wait, 'wait', 0, true);
  validateBoolean(fencing, 'fencing');
  validateBoolean(autoExtend, 'autoExtend');
  validateOnLockLost(onLockLost);
  const permits = given.permits;
  if (
    permits !== undefined &&
    !(typeof permits === 'number' && Number.isSafeInteger(permits) && permits >= 1 && permits <= MAX_PERMITS)
  ) {
    throw new InvalidArgumentError(
      `permits must be a whole number from 1 to ${MAX_PERMITS} (at most that many holders at once), got ${describe(permits)}.`,
    );
  }
  const mode = or(given.mode, 'write');
  if (mode !== 'read' && mode !== 'write') {
    throw new InvalidArgumentError(`mode must be 'read' or 'write', got ${describe(mode)}.`);
  }
  if (mode === 'read' && permits !== undefined) {
    throw new InvalidArgumentError(
      `mode: 'read' and permits cannot be combined: a semaphore's permits are exclusive locks. Use one or the other.`,
    );
  }
  const signal = given.signal;
  if (signal !== undefined && !isAbortSignal(signal)) {
    throw new InvalidArgumentError(`signal must be an AbortSignal, got ${describe(signal)}.`);
  }
  return {
    ttl,
    wait,
    fencing,
    guardWindow: guardWindowOf(defaults, ttl),
    signal,
    autoExtend,
    onLockLost,
    permits,
    mode,
  };
}

const NO_OPTIONS: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * A real AbortSignal: `instanceof` alone passes a Proxy around one (or an object made from its prototype),
 * whose `aborted` then throws inside the library; the getter's own brand check tells them apart.
 */
function isAbortSignal(value: unknown): value is AbortSignal {
  if (!(value instanceof AbortSignal)) return false;
  try {
    ABORTED_GETTER.call(value);
    return true;
  } catch {
    return false;
  }
}

const ABORTED_GETTER = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!;

/**
 * The restart-guard window for a call with `ttl`: 0 when the guard is off, otherwise the largest of the
 * configured window, the instance's ttl and the call's ttl.
 */
export function guardWindowOf(options: ResolvedOptions, ttl: number): number {
  const guard = options.restartGuard;
  return guard === false ? 0 : Math.max(guard === true ? 0 : guard, options.ttl, ttl);
}

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

/** A boolean option, named in the error. */
export function validateBoolean(value: unknown, name: string): asserts value is boolean {
  if (typeof value !== 'boolean')
    throw new InvalidArgumentError(`${name} must be true or false, got ${describe(value)}.`);
}

function validateOnLockLost(value: unknown): asserts value is 'throw' | 'warn' {
  if (value !== 'throw' && value !== 'warn') {
    throw new InvalidArgumentError(`onLockLost must be 'throw' or 'warn', got ${describe(value)}.`);
  }
}

/** The option names the `Redlock` constructor accepts. */
export const REDLOCK_OPTION_KEYS: ReadonlySet<string> = new Set([...Object.keys(DEFAULT_OPTIONS), 'logger']);
const REDLOCK_OPTIONS = { name: 'Redlock options', option: 'Redlock option', known: REDLOCK_OPTION_KEYS };

/** The most permits a semaphore may have: an acquisition may try every one of them in turn. */
export const MAX_PERMITS = 1_000;

/** The option names `acquire()` and `tryAcquire()` accept. */
export const ACQUIRE_OPTION_KEYS: ReadonlySet<string> = new Set([
  'ttl',
  'wait',
  'fencing',
  'signal',
  'permits',
  'mode',
]);
/** The option names `using()` accepts. */
export const USING_OPTION_KEYS: ReadonlySet<string> = new Set([
  ...ACQUIRE_OPTION_KEYS,
  'autoExtend',
  'onLockLost',
]);

/**
 * A misspelt option would otherwise be ignored silently and the default used instead; a reserved key
 * (`__proto__`), an inherited option, or a getter that throws are refused too ({@link readOptions}).
 */
export function rejectUnknownKeys(object: object, known: ReadonlySet<string>, what: string): void {
  readOptions(object, { name: `${what}s`, option: what, known });
}

/** Splits `using(resources, options?, fn)`'s overloaded arguments; refuses a missing function. */
export function usingArguments<F extends (...args: never[]) => unknown>(
  optionsOrFn: UsingOptions | F,
  maybeFn: F | undefined,
): { options: UsingOptions | undefined; fn: F } {
  const fn = typeof optionsOrFn === 'function' ? optionsOrFn : maybeFn;
  if (typeof fn !== 'function') {
    throw new InvalidArgumentError(
      'using() needs a function to run while the lock is held, as its last argument.',
    );
  }
  return { options: typeof optionsOrFn === 'function' ? undefined : optionsOrFn, fn };
}

/** `<hostname>:<pid>`, the hostname cut to fit {@link MAX_OWNER_LABEL}. */
function defaultOwnerLabel(): string {
  const pid = `:${process.pid}`;
  const host = hostname().replace(/[\x00-\x1f\x7f]/g, '') || 'unknown-host';
  return host.slice(0, MAX_OWNER_LABEL - pid.length) + pid;
}

function validateOwnerLabel(owner: unknown): asserts owner is string {
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
