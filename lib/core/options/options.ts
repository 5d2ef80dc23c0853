import { hostname } from 'node:os';
import { InvalidArgumentError } from '../errors';
import { readOptions } from './option-object';
import { MAX_OWNER_LABEL } from './option-rules';
import * as rules from './option-rules';

export { MAX_OWNER_LABEL, MAX_PERMITS, validateBoolean, validateTtl } from './option-rules';

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
  /**
   * At most this many callers of this instance wait for the same resources at once; the next one is refused at
   * once with a `LockQueueFullError` (429 on an HTTP route) instead of waiting: load shedding for a hot lock.
   * Counted per instance (each process's own waiters), not across the fleet. A whole number ≥ 1, or
   * `Infinity`. Default `Infinity` (no limit).
   */
  maxWaiting?: number;
  /**
   * Fair waiting (docs/DESIGN.md §18): waiters for a lock are granted in about the order they came, whichever
   * instance they are on — each waiting call holds a ticket on every node, and a node that finds the lock free
   * grants it to the oldest live ticket first, for a short turn. Applies to exclusive locks and writers
   * (readers already let a waiting writer first; a semaphore's permits are not ordered). Default false.
   */
  fair?: boolean;
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
   * Clock steps (docs/DESIGN.md §17): every acquire answer carries the node's `TIME`; when a node's wall
   * clock moved further between two of its answers than drift explains (an NTP step, a resumed VM, `date -s`),
   * its lock keys may have expired early, so its grants do not count for the restart guard's window (with the
   * guard off: the call's ttl) and a `clock-step` event names the node and the step. Default true; `false`
   * counts every grant, as before.
   */
  detectClockSteps?: boolean;
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
   * Which installed Redis client the library creates for nodes given as `redis://` URLs or option objects:
   * `'ioredis'` (option objects are ioredis options) or `'node-redis'` (package `redis` 4 or 5; option objects
   * are `createClient()` options). Clients passed in are used whatever this says. Default `'ioredis'`.
   */
  client?: 'ioredis' | 'node-redis';
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
  /** At most this many callers of this instance wait for these resources at once (see `RedlockOptions`). */
  maxWaiting?: number;
  /** Wait in arrival order across instances (see `RedlockOptions`); not with `permits` or `mode: 'read'`. */
  fair?: boolean;
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
  /** How many callers of the instance may wait for the same resources at once (`Infinity`: no limit). */
  readonly maxWaiting: number;
  /** Fair waiting: this call takes its turn in arrival order (an exclusive lock or a writer). */
  readonly fair: boolean;
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

/** The defaults, documented once. */
export const DEFAULT_OPTIONS = Object.freeze({
  ttl: 10_000,
  driftFactor: 0.01,
  nodeTimeout: 50,
  wait: 5_000,
  maxWaiting: Infinity,
  fair: false,
  retryDelay: 10,
  maxRetryDelay: 200,
  keyPrefix: 'redlock:',
  owner: defaultOwnerLabel(),
  fencing: false,
  restartGuard: true as boolean | number,
  detectClockSteps: true,
  autoExtend: true,
  onLockLost: 'throw' as 'throw' | 'warn',
  client: 'ioredis' as 'ioredis' | 'node-redis',
});

const consoleLogger: RedlockLogger = { warn: (message) => console.warn(`[redlock] ${message}`) };

/** Applies the defaults and validates; throws {@link InvalidArgumentError} naming the option and the fix. */
export function resolveOptions(options: RedlockOptions = {}): ResolvedOptions {
  const { logger, ...given } = readOptions(options, REDLOCK_OPTIONS);
  const resolved: Record<keyof typeof DEFAULT_OPTIONS, unknown> = Object.assign(
    Object.create(null) as object,
    DEFAULT_OPTIONS,
    given,
  );
  const { ttl, driftFactor, nodeTimeout, wait, maxWaiting, fair, retryDelay, maxRetryDelay } = resolved;
  const { fencing, autoExtend, onLockLost, restartGuard, keyPrefix, owner, client } = resolved;
  const { detectClockSteps } = resolved;
  const defaults = DEFAULT_OPTIONS;
  rules.validateTtl(ttl, 'ttl');
  rules.validateDriftFactor(driftFactor);
  rules.validateDurationOption(nodeTimeout, 'nodeTimeout', 1, defaults.nodeTimeout);
  rules.validateDurationOption(wait, 'wait', 0, defaults.wait, true);
  rules.validateMaxWaiting(maxWaiting);
  rules.validateBoolean(fair, 'fair', defaults.fair);
  rules.validateDurationOption(retryDelay, 'retryDelay', 0, defaults.retryDelay);
  rules.validateDurationOption(maxRetryDelay, 'maxRetryDelay', 0, defaults.maxRetryDelay);
  rules.validateRetryDelays(retryDelay, maxRetryDelay);
  rules.validateBoolean(fencing, 'fencing', defaults.fencing);
  rules.validateBoolean(autoExtend, 'autoExtend', defaults.autoExtend);
  rules.validateOnLockLost(onLockLost, defaults.onLockLost);
  rules.validateRestartGuard(restartGuard);
  rules.validateBoolean(detectClockSteps, 'detectClockSteps', defaults.detectClockSteps);
  rules.validateKeyPrefix(keyPrefix);
  rules.validateOwnerLabel(owner);
  rules.validateClientKind(client, defaults.client);
  return Object.freeze({
    ttl,
    driftFactor,
    nodeTimeout,
    wait,
    maxWaiting,
    fair,
    retryDelay,
    maxRetryDelay,
    fencing,
    autoExtend,
    onLockLost,
    restartGuard,
    detectClockSteps,
    keyPrefix,
    owner,
    client,
    logger: rules.loggerOf(logger, consoleLogger),
  });
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
  const maxWaiting = or(given.maxWaiting, defaults.maxWaiting);
  const fair = or(given.fair, undefined);
  const fencing = or(given.fencing, defaults.fencing);
  const autoExtend = or(given.autoExtend, defaults.autoExtend);
  const onLockLost = or(given.onLockLost, defaults.onLockLost);
  // Left out, a call's setting is the instance's: that is the fix each message names.
  rules.validateTtl(ttl, 'ttl');
  rules.validateDurationOption(wait, 'wait', 0, defaults.wait, true);
  rules.validateMaxWaiting(maxWaiting);
  rules.validateBoolean(fencing, 'fencing', defaults.fencing);
  rules.validateBoolean(autoExtend, 'autoExtend', defaults.autoExtend);
  rules.validateOnLockLost(onLockLost, defaults.onLockLost);
  const permits = given.permits;
  rules.validatePermits(permits);
  const mode = or(given.mode, 'write');
  rules.validateMode(mode, permits);
  // Asked for by the call: refused where it cannot apply; the instance's default applies where it can.
  if (fair !== undefined) rules.validateFair(fair, permits, mode);
  const signal = given.signal;
  rules.validateSignal(signal);
  return {
    ttl,
    wait,
    maxWaiting,
    fair: (fair ?? defaults.fair) === true && permits === undefined && mode === 'write',
    fencing,
    guardWindow: guardWindowOf(defaults, ttl),
    signal,
    autoExtend,
    onLockLost,
    permits,
    mode,
  };
}

const NO_OPTIONS: Readonly<Record<string, unknown>> = Object.freeze(
  Object.create(null) as Record<string, unknown>,
);

/**
 * The restart-guard window for a call with `ttl`: 0 when the guard is off, otherwise the largest of the
 * configured window, the instance's ttl and the call's ttl.
 */
export function guardWindowOf(options: ResolvedOptions, ttl: number): number {
  const guard = options.restartGuard;
  return guard === false ? 0 : Math.max(guard === true ? 0 : guard, options.ttl, ttl);
}

/** The option names the `Redlock` constructor accepts. */
export const REDLOCK_OPTION_KEYS: ReadonlySet<string> = new Set([...Object.keys(DEFAULT_OPTIONS), 'logger']);
const REDLOCK_OPTIONS = { name: 'Redlock options', option: 'Redlock option', known: REDLOCK_OPTION_KEYS };

/** The option names `acquire()` and `tryAcquire()` accept. */
export const ACQUIRE_OPTION_KEYS: ReadonlySet<string> = new Set([
  'ttl',
  'wait',
  'maxWaiting',
  'fair',
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
export function readMethodOptions(
  object: unknown,
  known: ReadonlySet<string>,
  what: string,
  example: string,
): Record<string, unknown> {
  return readOptions(object, { name: `${what}s`, option: what, known, example });
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
