import type { ScenarioId } from '../scenarios/types';

/**
 * The common face every implementation shows the scenarios: acquire one resource for `ttl` ms, release it.
 * Each adapter creates its own ioredis clients to the nodes it is given and closes them in `teardown()`.
 */
export interface BenchLock {
  readonly name: ImplName;
  /** Resolves a handle once the lock is held; rejects when the implementation gives up. */
  acquire(resource: string, ttl: number): Promise<unknown>;
  release(handle: unknown): Promise<void>;
  /**
   * Acquires `resource`, runs `work` while the implementation keeps the lock alive (its own auto-extension,
   * where it has one), then releases it.
   */
  holdWhile(resource: string, ttl: number, work: () => Promise<void>): Promise<void>;
  teardown(): Promise<void>;
}

export type ImplName =
  | 'nestjs-redlock'
  | 'nestjs-redlock (guard off)'
  | 'nestjs-redlock (fair)'
  | 'node-redlock'
  | 'sesamecare-redlock'
  | 'redlock-universal'
  | 'floor'
  | 'floor+scripts'
  | 'floor+scripts+autopipelining'
  | 'floor+autopipelining'
  | 'nestjs-redlock (node-redis)'
  | 'nestjs-redlock (node-redis, created)'
  | 'nestjs-redlock (iovalkey)'
  | 'nestjs-redlock (ioredis, passed in)';

export interface SetupOptions {
  /** redis:// URLs of the independent nodes, in order. */
  readonly urls: readonly string[];
  /** The wait budget nestjs-redlock gets (peers keep their own defaults). */
  readonly waitBudgetMs: number;
  /** The scenario's lock ttl (each call passes it too; nestjs-redlock also takes it as its instance default). */
  readonly ttl: number;
  /**
   * Retries for the peers that count them (node-redlock's retryCount, redlock-universal's retryAttempts);
   * default: their own defaults. Scenario 10 gives them enough to wait as long as nestjs-redlock's budget.
   */
  readonly retries?: number;
}

export interface Implementation {
  readonly name: ImplName;
  /** The package it measures. */
  readonly pkg: string;
  /** Client and retry settings used, for the report. */
  readonly settings: string;
  /** How `holdWhile` keeps a lock alive, for the report. */
  readonly extension: string;
  /** False for the raw floor, which has no retry policy (left out of the contention scenario). */
  readonly retries: boolean;
  /** The scenarios it takes part in; default: every one (the client variants of nestjs-redlock: 1–3). */
  readonly scenarios?: readonly ScenarioId[];
  setup(options: SetupOptions): Promise<BenchLock>;
}
