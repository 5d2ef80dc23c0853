import { MemoryNode, Redlock, type RedlockOptions, memoryNodes } from '../../lib';

/** What {@link useMemoryNodes} gives a describe block. */
export interface MemoryNodesFixture {
  /** The current test's nodes: three fresh ones before each test (always this array, refilled). */
  readonly nodes: MemoryNode[];
  /** Puts other nodes in the array for the rest of the test (e.g. with the restart guard on). */
  use(nodes: readonly MemoryNode[]): void;
  /** A Redlock instance over the nodes (its own "process": its own owner label), quit after the test. */
  instance(options?: RedlockOptions): Redlock;
}

/**
 * The in-memory node fixture of a describe block: fresh nodes (memoryNodes()) before each test; after it,
 * every node resumed (a paused one would hold a quit() up), every instance made by `instance()` quit, then
 * `afterEachTest` (e.g. `jest.useRealTimers()`).
 */
export function useMemoryNodes(afterEachTest?: () => void): MemoryNodesFixture {
  const instances: Redlock[] = [];
  const nodes: MemoryNode[] = [];
  const use = (fresh: readonly MemoryNode[]) => {
    nodes.splice(0, nodes.length, ...fresh);
  };
  beforeEach(() => use(memoryNodes()));
  afterEach(async () => {
    for (const node of nodes) node.resume();
    await Promise.all(instances.splice(0).map((redlock) => redlock.quit()));
    afterEachTest?.();
  });
  return {
    nodes,
    use,
    instance(options: RedlockOptions = {}): Redlock {
      const redlock = new Redlock(nodes, { logger: false, owner: `app${instances.length}`, ...options });
      instances.push(redlock);
      return redlock;
    },
  };
}
