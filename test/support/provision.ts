import { Redis } from 'ioredis';
import { aptInstallRedis, canAptInstall } from './apt-install';
import { detectDocker, DockerRedisNode } from './docker-node';
import { ExternalRedisNode, externalNodeUrls } from './external-node';
import { findOnPath } from './find-binary';
import { LocalRedisNode } from './local-node';
import type { NodeSource, RedisNodeHandle, RedisNodes, StartRedisNodesOptions } from './types';

const HOW_TO_FIX =
  'No Redis available for the tests. Fix one of: install redis-server so it is on PATH ' +
  '(Debian/Ubuntu: `sudo apt-get install redis-server`, macOS: `brew install redis`), ' +
  'start a Docker engine (the harness then uses the redis:7 image via testcontainers), ' +
  'or set REDLOCK_TEST_NODES to comma-separated redis:// URLs of independent, disposable nodes.';

/**
 * Provision `count` independent Redis nodes, in the order of DESIGN §4:
 * REDLOCK_TEST_NODES → redis-server on PATH → Docker → apt-get install (root, Debian) → error.
 */
export async function startRedisNodes(
  count: number,
  options: StartRedisNodesOptions = {},
): Promise<RedisNodes> {
  const extraArgs = options.extraArgs ?? [];
  const source = options.source ?? (await chooseSource());
  switch (source) {
    case 'external': {
      const urls = externalNodeUrls();
      if (!urls)
        throw new Error('source "external" needs REDLOCK_TEST_NODES (comma-separated redis:// URLs)');
      if (urls.length < count) {
        throw new Error(`REDLOCK_TEST_NODES lists ${urls.length} node(s) but the test needs ${count}`);
      }
      const nodes = urls.slice(0, count).map((url, i) => new ExternalRedisNode(i, url));
      return makeNodes('external', nodes, async () => undefined);
    }
    case 'path':
    case 'apt': {
      const bin = findOnPath('redis-server') ?? (source === 'apt' ? aptInstallRedis() : undefined);
      if (!bin) throw new Error(`source "path": redis-server is not on PATH. ${HOW_TO_FIX}`);
      const nodes = await startAll(count, (i) => LocalRedisNode.create(i, bin, extraArgs));
      return makeNodes(source, nodes, () => Promise.all(nodes.map((n) => n.dispose())).then(() => undefined));
    }
    case 'docker': {
      const tc = await detectDocker();
      if (!tc) throw new Error(`source "docker": no container runtime answered. ${HOW_TO_FIX}`);
      const nodes = await startAll(count, (i) => DockerRedisNode.create(i, tc, extraArgs));
      return makeNodes('docker', nodes, () => Promise.all(nodes.map((n) => n.kill())).then(() => undefined));
    }
  }
}

async function chooseSource(): Promise<NodeSource> {
  if (externalNodeUrls()) return 'external';
  if (findOnPath('redis-server')) return 'path';
  if (await detectDocker()) return 'docker';
  if (canAptInstall()) return 'apt';
  throw new Error(HOW_TO_FIX);
}

/** Start nodes in parallel; if any fails, dispose the ones that did start before rethrowing. */
async function startAll<T extends { kill(): Promise<void>; dispose?(): Promise<void> }>(
  count: number,
  create: (index: number) => Promise<T>,
): Promise<T[]> {
  const results = await Promise.allSettled(Array.from({ length: count }, (_, i) => create(i)));
  const started = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.allSettled(started.map((n) => (n.dispose ? n.dispose() : n.kill())));
    throw failed.reason;
  }
  return started;
}

function makeNodes(source: NodeSource, nodes: RedisNodeHandle[], stopAll: () => Promise<void>): RedisNodes {
  let stopping: Promise<void> | undefined;
  return {
    source,
    nodes,
    get urls() {
      return nodes.map((n) => n.url);
    },
    async flushAll() {
      await Promise.all(
        nodes
          .filter((n) => n.running && !n.paused)
          .map(async (n) => {
            const client: Redis = n.redis();
            try {
              await client.flushall();
            } finally {
              client.disconnect();
            }
          }),
      );
    },
    stop() {
      stopping ??= stopAll();
      return stopping;
    },
  };
}
