/**
 * Local Redis nodes for development, without Docker:
 *
 *   npm run dev:redis          (3 nodes)
 *   npm run dev:redis -- 5     (5 nodes)
 *
 * Starts independent redis-server processes the way the tests do (test/support: redis-server on PATH, else
 * a Docker engine, else apt-get install on a root Debian/Ubuntu machine; REDLOCK_TEST_NODES lists nodes of
 * your own instead), on free ports of 127.0.0.1, without persistence. Prints the
 * `RedlockModule.forRoot([...])` line to paste, then waits. Ctrl-C (SIGINT) or SIGTERM stops the nodes it
 * started — each by its pid, waiting until it exited — removes their data folders and exits.
 */
import { serveNodes } from '../lib/cli';
import { startRedisNodes } from '../test/support';
import type { RedisNodes } from '../test/support';

const SOURCES: Record<RedisNodes['source'], string> = {
  path: 'redis-server from PATH',
  apt: 'redis-server installed with apt-get',
  docker: 'redis:7 containers (Docker)',
  external: 'listed in REDLOCK_TEST_NODES (not started here, left running)',
};

function nodeCount(arg: string | undefined): number {
  if (arg === undefined) return 3;
  const count = Number(arg);
  if (!Number.isInteger(count) || count < 1 || count > 9) {
    throw new Error(`dev:redis: the node count must be a whole number from 1 to 9, got '${arg}'`);
  }
  return count;
}

async function main(): Promise<void> {
  const count = nodeCount(process.argv[2]);
  let source: RedisNodes['source'] | undefined;
  // The harness also kills the processes it spawned when this process exits.
  await serveNodes(
    'dev:redis',
    async () => {
      const nodes = await startRedisNodes(count);
      source = nodes.source;
      return nodes;
    },
    (nodes) => `${nodes.urls.length} Redis node(s), ${SOURCES[source!]}`,
    ['The ports change on every run (`npx nestjs-redlock dev-redis` uses 6379, 6380, 6381).'],
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
