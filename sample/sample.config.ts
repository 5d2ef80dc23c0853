/**
 * The sample's settings, read from the environment (one process per instance):
 *
 * | variable        | default                         | meaning                                                   |
 * | --------------- | ------------------------------- | --------------------------------------------------------- |
 * | `PORT`          | `3000`                          | HTTP port (the server listens on 127.0.0.1 only)          |
 * | `INSTANCE`      | `sample-<pid>`                  | this instance's name, recorded with every sale and run    |
 * | `REDIS_NODES`   | `redis://127.0.0.1:6379`        | comma-separated URLs of the independent Redis nodes       |
 * | `DB_FILE`       | `<tmp>/nestjs-redlock-sample.db`| the SQLite file shared by all instances                   |
 * | `LOCK_DISABLED` | off                             | `1`: purchases run without the lock (to see what it stops)|
 * | `LOCK_TTL`      | `10000`                         | lock ttl in ms (also the restart-guard window)            |
 * | `NODE_TIMEOUT`  | `200`                           | how long one Redis node may take to answer, in ms         |
 * | `WORK_MS`       | `25`                            | simulated work between reading and writing the stock     |
 */
import * as os from 'node:os';
import * as path from 'node:path';

export interface SampleConfig {
  readonly port: number;
  readonly instance: string;
  readonly redisNodes: readonly string[];
  readonly dbFile: string;
  /** Purchases skip the lock (and so have no fencing token): the negative control of the demo. */
  readonly lockDisabled: boolean;
  /** The module's lock ttl, ms; the restart guard is set to the same window (the largest ttl in use). */
  readonly lockTtl: number;
  /** `RedlockModule`'s `restartGuard`: a window in ms, or `false` (tests on nodes they just started). */
  readonly restartGuard: number | false;
  readonly nodeTimeout: number;
  /** Time spent "paying" between reading the stock and writing it, ms: the window a race needs. */
  readonly workMs: number;
}

/** Injection token of the {@link SampleConfig}. */
export const SAMPLE_CONFIG = Symbol('SAMPLE_CONFIG');

export function loadConfig(env: NodeJS.ProcessEnv = process.env): SampleConfig {
  const lockTtl = integer(env, 'LOCK_TTL', 10_000);
  return Object.freeze({
    port: integer(env, 'PORT', 3000),
    instance: env.INSTANCE || `sample-${process.pid}`,
    redisNodes: Object.freeze(
      (env.REDIS_NODES || 'redis://127.0.0.1:6379')
        .split(',')
        .map((url) => url.trim())
        .filter(Boolean),
    ),
    dbFile: env.DB_FILE || path.join(os.tmpdir(), 'nestjs-redlock-sample.db'),
    lockDisabled: /^(1|true|yes|on)$/i.test(env.LOCK_DISABLED ?? ''),
    lockTtl,
    restartGuard: lockTtl,
    nodeTimeout: integer(env, 'NODE_TIMEOUT', 200),
    workMs: integer(env, 'WORK_MS', 25),
  });
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(text)}.`);
  }
  return value;
}
