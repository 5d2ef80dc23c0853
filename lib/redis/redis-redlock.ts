import { RedlockCore, RedlockInternals, RedlockOptions, resolveOptions } from '../core';
import { nodeList } from './node-list';
import { NodeSpec, resolveNodes } from './node-specs';

/**
 * The Redlock algorithm over N independent Redis nodes, given as connection strings, ioredis options,
 * ioredis clients or custom `LockNode`s. The algorithm is the core's; this class only turns the specs into
 * nodes (one `IoredisLockNode` per Redis server).
 */
export class Redlock extends RedlockCore {
  /**
   * @param nodes connection strings, ioredis options, ioredis clients or `LockNode`s — one per independent
   *   Redis server. Clients created here from strings or options are closed by `quit()`; clients passed in
   *   ready-made are left open. Or one string of connection strings separated by commas (`REDLOCK_NODES`).
   * @param options defaults for every call; see {@link RedlockOptions}.
   */
  constructor(nodes: readonly NodeSpec[] | string, options?: RedlockOptions);
  /** @internal With test and simulation hooks. */
  constructor(
    nodes: readonly NodeSpec[] | string,
    options: RedlockOptions | undefined,
    internals: RedlockInternals,
  );
  constructor(
    nodes: readonly NodeSpec[] | string,
    options: RedlockOptions = {},
    internals: RedlockInternals = {},
  ) {
    // Options first: a bad option must not leave connections behind.
    super(withValidOptions(nodes, options), options, internals);
  }
}

/** Validates the options before any client is created (the core validates them again), then resolves the nodes. */
function withValidOptions(nodes: readonly NodeSpec[] | string, options: RedlockOptions) {
  const { client } = resolveOptions(options);
  return resolveNodes(nodeList(nodes), client);
}
