import { waitForNodeAge } from './node-age';
import { startRedisNodes } from './provision';
import type { RedisNodes, StartRedisNodesOptions } from './types';

/** What {@link useRedisNodes} registers around the tests, besides starting, flushing and stopping the nodes. */
export interface UseRedisNodesOptions extends StartRedisNodesOptions {
  /** Runs after each test, before the nodes are flushed (close the apps or instances the test made). */
  readonly afterEach?: () => Promise<void>;
  /** Runs once after the last test, before the nodes stop (close what the spec's beforeAll made on them). */
  readonly afterAll?: () => Promise<void>;
  /** false: no FLUSHALL after each test, the tests see the keys the earlier ones left. Default true. */
  readonly flushAfterEach?: boolean;
  /**
   * A restart-guard window in ms: the beforeAll also waits until every node is past it
   * ({@link waitForNodeAge}), for blocks whose locks need nodes the guard (on by default) does not refuse.
   */
  readonly pastGuard?: number;
}

/**
 * The node fixture of a describe block: `count` real redis-server nodes started once (beforeAll), flushed
 * after each test (after `options.afterEach`; not with `flushAfterEach: false`), stopped at the end (after
 * `options.afterAll`); with `pastGuard`, that beforeAll resolves once the nodes are past that guard window.
 * Jest runs a block's beforeAll and afterAll hooks in the order they are declared: a beforeAll that needs
 * the nodes goes after this call, and cleanup that must run before the nodes stop goes in
 * `options.afterAll`, not in an afterAll of the spec's own.
 *
 * Returns a handle that is the started {@link RedisNodes}: each of its members reads the nodes started by
 * the beforeAll, so it can be kept in a const and passed to helpers that take a RedisNodes. Used before
 * that beforeAll ran (at collection time, or in a beforeAll declared above this call), it throws.
 */
export function useRedisNodes(count: number, options: UseRedisNodesOptions = {}): RedisNodes {
  let started: RedisNodes | undefined;
  const {
    afterEach: cleanUpEach,
    afterAll: cleanUpAll,
    flushAfterEach = true,
    pastGuard,
    ...start
  } = options;
  beforeAll(async () => {
    started = await startRedisNodes(count, start);
    if (pastGuard !== undefined) await waitForNodeAge(started, pastGuard);
  });
  afterEach(async () => {
    await cleanUpEach?.();
    if (flushAfterEach) await started?.flushAll();
  });
  afterAll(async () => {
    await cleanUpAll?.();
    await started?.stop();
  });
  const current = (): RedisNodes => {
    if (!started) {
      throw new Error(
        `useRedisNodes(${count}): the nodes are not started yet; use them inside a test, or a hook declared after useRedisNodes()`,
      );
    }
    return started;
  };
  return {
    get source() {
      return current().source;
    },
    get nodes() {
      return current().nodes;
    },
    get urls() {
      return current().urls;
    },
    flushAll: () => current().flushAll(),
    stop: () => current().stop(),
  };
}
