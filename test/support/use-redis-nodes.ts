import { startRedisNodes } from './provision';
import type { RedisNodes, StartRedisNodesOptions } from './types';

/** What {@link useRedisNodes} registers around each test, besides starting and stopping the nodes. */
export interface UseRedisNodesOptions extends StartRedisNodesOptions {
  /** Runs after each test, before the nodes are flushed (close the apps or instances the test made). */
  readonly afterEach?: () => Promise<void>;
}

/**
 * The node fixture of a spec file: `count` real redis-server nodes started once for the file (beforeAll),
 * flushed after each test (after `options.afterEach`), stopped at the end. Returns a getter: call it inside
 * tests and hooks, once the nodes exist.
 */
export function useRedisNodes(count: number, options: UseRedisNodesOptions = {}): () => RedisNodes {
  let nodes: RedisNodes | undefined;
  const { afterEach: cleanUp, ...start } = options;
  beforeAll(async () => {
    nodes = await startRedisNodes(count, start);
  });
  afterEach(async () => {
    await cleanUp?.();
    await nodes?.flushAll();
  });
  afterAll(async () => {
    await nodes?.stop();
  });
  return () => {
    if (!nodes)
      throw new Error('useRedisNodes: the nodes are not started yet (call the getter inside a test)');
    return nodes;
  };
}
