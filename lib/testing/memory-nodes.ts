import { InvalidArgumentError, describe } from '../core';
import { MemoryNode } from './memory-node';

/** Options of {@link memoryNodes}. */
export interface MemoryNodesOptions {
  /**
   * Allows in-memory nodes when `NODE_ENV` is `production`. They give no exclusion across processes — each
   * process has nodes of its own — so in production they are refused unless this is `true`.
   */
  readonly allowInProduction?: boolean;
  /**
   * Whether the nodes run the restart guard as Redis nodes do: a node's uptime counts from its creation and
   * from each `loseData()`, so an instance with the guard on (its default) is refused new locks there for the
   * guard window. Default `false`: the nodes skip the guard, as nodes up for long — tests rarely want to wait
   * a window out.
   */
  readonly restartGuard?: boolean;
  /** How the nodes are named in messages: `${name}-1`, `${name}-2`, … Default `'memory'`. */
  readonly name?: string;
}

/** The most in-memory nodes one call makes (a group of Redis nodes is a handful). */
const MAX_NODES = 99;
const OPTION_KEYS = ['allowInProduction', 'restartGuard', 'name'];

/**
 * `count` in-memory lock nodes (default 3) for tests that run without Redis: pass them as `nodes` to
 * `RedlockModule.forRoot(nodes, ...)` or `new Redlock(nodes, ...)`. They run the same model of the lock scripts
 * that the library's differential test checks against real Redis — read-write locks, permits, fencing, intents,
 * release announcements, inspection and revocation — on `Date.now()`, so `jest.useFakeTimers()` and
 * `jest.advanceTimersByTime()` move the nodes' time together with the locks' validity. Several instances (say,
 * two Nest apps in one test) given the same nodes contend as separate processes on the same Redis nodes would.
 * Each node can be paused, made unreachable or made to lose its data ({@link MemoryNode}).
 *
 * Not for production: the nodes live in one process, so they exclude nothing across processes. Refused
 * (`InvalidArgumentError`) when `process.env.NODE_ENV` is `'production'` unless `allowInProduction` is true.
 */
export function memoryNodes(count = 3, options: MemoryNodesOptions = {}): MemoryNode[] {
  if (!Number.isInteger(count) || count < 1 || count > MAX_NODES) {
    throw new InvalidArgumentError(
      `memoryNodes(count): count must be a whole number from 1 to ${MAX_NODES}, got ${describe(count)}`,
    );
  }
  checkOptions(options);
  if (process.env.NODE_ENV === 'production' && options.allowInProduction !== true) {
    throw new InvalidArgumentError(
      'memoryNodes(): in-memory lock nodes are for tests, and NODE_ENV is "production". They live inside ' +
        'this process, so they exclude nothing across processes: use Redis nodes, or pass ' +
        '{ allowInProduction: true } if one process is really all there is.',
    );
  }
  const name = options.name ?? 'memory';
  return Array.from({ length: count }, (_, i) => new MemoryNode(`${name}-${i + 1}`, options.restartGuard));
}

function checkOptions(options: MemoryNodesOptions): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError(
      `memoryNodes(count, options): options must be an object, got ${describe(options)}`,
    );
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.includes(key)) {
      throw new InvalidArgumentError(
        `memoryNodes(): unknown option "${key}" (known: ${OPTION_KEYS.join(', ')})`,
      );
    }
  }
  for (const key of ['allowInProduction', 'restartGuard'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'boolean') {
      throw new InvalidArgumentError(
        `memoryNodes(): ${key} must be a boolean, got ${describe(options[key])}`,
      );
    }
  }
  if (options.name !== undefined && (typeof options.name !== 'string' || options.name === '')) {
    throw new InvalidArgumentError(
      `memoryNodes(): name must be a non-empty string, got ${describe(options.name)}`,
    );
  }
}
