import type { Redis, RedisOptions } from 'ioredis';

/**
 * Options of the clients returned by RedisNodeHandle.redis(). disconnectTimeout is short because a
 * client left reconnecting to a killed node otherwise holds a 2 s timer on disconnect() (ioredis waits for
 * a 'close' that its already-destroyed socket never emits), which keeps Jest from exiting.
 */
export const ADMIN_CLIENT_OPTIONS: RedisOptions = {
  lazyConnect: false,
  maxRetriesPerRequest: 1,
  disconnectTimeout: 100,
};

/** Where the Redis nodes of a test run come from (DESIGN §4, in order of preference). */
export type NodeSource = 'external' | 'path' | 'docker' | 'apt';

export interface RedisNodeHandle {
  /** 0-based position in `RedisNodes.nodes`. */
  readonly index: number;
  readonly host: string;
  /** The port clients connect to (the redis port itself, not a proxy). */
  readonly port: number;
  readonly url: string;
  /** Current redis-server pid; undefined when not running, and for external/docker nodes. */
  readonly pid: number | undefined;
  readonly running: boolean;
  readonly paused: boolean;
  /** SIGKILL and wait until the process has exited (port free). */
  kill(): Promise<void>;
  /** SIGSTOP: the node keeps its connections but answers nothing. */
  pause(): Promise<void>;
  /** SIGCONT. */
  resume(): Promise<void>;
  /** Start again after kill(): empty, same port; resolves when it answers PING. */
  start(): Promise<void>;
  /** kill() then start(): comes back with no data and a new run_id. */
  restartEmpty(): Promise<void>;
  /** A fresh ioredis client for admin/inspection; the caller quits it. */
  redis(): Redis;
}

export interface RedisNodes {
  readonly source: NodeSource;
  readonly nodes: RedisNodeHandle[];
  readonly urls: string[];
  /** FLUSHALL on every running, unpaused node. */
  flushAll(): Promise<void>;
  /** Stop everything this harness started; idempotent; resumes paused nodes first. */
  stop(): Promise<void>;
}

export interface StartRedisNodesOptions {
  /** Force one source instead of the DESIGN §4 order. */
  source?: NodeSource;
  /** Extra redis-server arguments, e.g. ['--maxmemory', '64mb'] (path/apt/docker sources). */
  extraArgs?: string[];
}
