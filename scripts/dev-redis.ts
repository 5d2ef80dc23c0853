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
import { startRedisNodes } from '../test/support';
import type { RedisNodes } from '../test/support';

const SOURCES: Record<RedisNodes['source'], string> = {
  path: 'redis-server from PATH',
  apt: 'redis-server installed with apt-get',
  docker: 'redis:7 containers (Docker)',
  external: 'listed in REDLOCK_TEST_NODES (not started here, left running)',
};

const log = (line = '') => process.stdout.write(`${line}\n`);

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
  let nodes: RedisNodes | undefined;
  let stopping = false;
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log(`\ndev:redis: ${signal}: stopping ${nodes ? nodes.nodes.length : 0} node(s)`);
    await nodes?.stop();
    log('dev:redis: stopped');
    process.exit(0);
  };
  // Installed before the nodes start: a Ctrl-C during start-up still stops what did start (the harness
  // kills the processes it spawned when this process exits).
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));

  nodes = await startRedisNodes(count);
  if (stopping) return;
  const urls = nodes.urls;
  log(`dev:redis: ${urls.length} Redis node(s), ${SOURCES[nodes.source]}; Ctrl-C stops them.`);
  log();
  log(`  RedlockModule.forRoot([${urls.map((url) => `'${url}'`).join(', ')}])`);
  log();
  log(`  or in the environment: REDLOCK_NODES=${urls.join(',')}`);
  log();
  log('The ports change on every run. Fresh nodes refuse locks for their first ttl (the restart guard,');
  log('10 s by default): wait that long, or pass { restartGuard: false } in tests that start fresh nodes.');
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
