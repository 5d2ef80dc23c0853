import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Redis from 'ioredis';
import { findOnPath } from './find-binary';
import { LocalRedisNode } from './local-node';
import { startRedisNodes } from './provision';
import type { RedisNodes } from './types';

const run = promisify(execFile);

/** A local Redis Cluster: `masters` primaries with one replica each, all real redis-server processes. */
export interface LocalCluster {
  readonly nodes: RedisNodes;
  /** `host:port` of every node, masters first as `redis-cli --cluster create` assigned them. */
  readonly addresses: string[];
  /** Startup nodes for an ioredis `Cluster`. */
  readonly startup: { host: string; port: number }[];
  /**
   * Resolves once `cluster_state` (CLUSTER INFO) is `ok` on every node, as each node's log says: the last
   * `Cluster state changed: …` line its current process logged reads `ok` (a node logs each change).
   */
  waitUntilOk(): Promise<void>;
  /** The primary currently serving `slot`, as `host:port`. */
  primaryOf(slot: number): Promise<string>;
  /** Moves `slot` to another primary (SETSLOT IMPORTING/MIGRATING, MIGRATE its keys, SETSLOT NODE everywhere). */
  migrate(slot: number): Promise<{ from: string; to: string }>;
  /** Makes a replica of the primary serving `slot` take over (CLUSTER FAILOVER on the replica). */
  failover(slot: number): Promise<{ from: string; to: string }>;
  stop(): Promise<void>;
}

export async function startCluster(masters = 3): Promise<LocalCluster> {
  const cli = findOnPath('redis-cli');
  if (!cli) throw new Error('redis-cli is not installed (Debian: apt-get install redis-tools)');
  const nodes = await startRedisNodes(masters * 2, {
    extraArgs: [
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      'nodes.conf',
      '--cluster-node-timeout',
      '1000',
    ],
  });
  const locals = nodes.nodes.map((node) => {
    if (!(node instanceof LocalRedisNode))
      throw new Error(`a local cluster needs redis-server processes (source ${nodes.source})`);
    return node;
  });
  const addresses = nodes.urls.map((url) => url.replace('redis://', ''));
  const localAt = (address: string) => locals.find((node) => node.url === `redis://${address}`)!;
  await run(cli, ['--cluster', 'create', ...addresses, '--cluster-replicas', '1', '--cluster-yes'], {
    timeout: 30_000,
  });
  const admin = (address: string) => {
    const [host, port] = address.split(':');
    return new Redis({ host, port: Number(port), maxRetriesPerRequest: 1, lazyConnect: false });
  };
  const call = async <T>(address: string, ...args: (string | number)[]): Promise<T> => {
    const client = admin(address);
    try {
      return (await client.call(String(args[0]), ...args.slice(1).map(String))) as T;
    } finally {
      client.disconnect();
    }
  };
  const view = async () => {
    const text = await call<string>(addresses[0], 'CLUSTER', 'NODES');
    return text
      .trim()
      .split('\n')
      .map((line) => {
        const [id, address, flags, master, , , , , ...slots] = line.split(' ');
        return { id, address: address.split('@')[0], flags, master, slots };
      });
  };
  const cluster: LocalCluster = {
    nodes,
    addresses,
    startup: addresses.map((address) => ({ host: '127.0.0.1', port: Number(address.split(':')[1]) })),
    waitUntilOk() {
      return new Promise<void>((resolve) => {
        const check = () => {
          if (!locals.every((node) => clusterState(node.log) === 'ok')) return;
          stops.forEach((stop) => stop());
          resolve();
        };
        const stops = locals.map((node) => node.onLog(check));
        check();
      });
    },
    async primaryOf(slot) {
      const slots = await call<[number, number, [string, number]][]>(addresses[0], 'CLUSTER', 'SLOTS');
      const range = slots.find(([start, end]) => slot >= start && slot <= end);
      if (!range) throw new Error(`no primary serves slot ${slot}`);
      return `${range[2][0]}:${range[2][1]}`;
    },
    async migrate(slot) {
      const nodesNow = await view();
      const from = await cluster.primaryOf(slot);
      const source = nodesNow.find((n) => n.address === from)!;
      const target = nodesNow.find((n) => n.flags.includes('master') && n.address !== from)!;
      await call(target.address, 'CLUSTER', 'SETSLOT', slot, 'IMPORTING', source.id);
      await call(from, 'CLUSTER', 'SETSLOT', slot, 'MIGRATING', target.id);
      for (;;) {
        const keys = await call<string[]>(from, 'CLUSTER', 'GETKEYSINSLOT', slot, 100);
        if (keys.length === 0) break;
        const [host, port] = target.address.split(':');
        await call(from, 'MIGRATE', host, port, '', 0, 5000, 'KEYS', ...keys);
      }
      for (const n of nodesNow.filter((node) => node.flags.includes('master'))) {
        await call(n.address, 'CLUSTER', 'SETSLOT', slot, 'NODE', target.id);
      }
      return { from, to: target.address };
    },
    async failover(slot) {
      const from = await cluster.primaryOf(slot);
      const nodesNow = await view();
      const primary = nodesNow.find((n) => n.address === from)!;
      const replica = nodesNow.find((n) => n.master === primary.id)!;
      // Taken over once the replica won the election and the old primary took the new configuration (from the
      // new primary's broadcast, which every node gets at the same time).
      const won = nextLine(localAt(replica.address), /Failover election won/);
      const demoted = nextLine(localAt(from), /Reconfiguring myself as a replica of/);
      await call(replica.address, 'CLUSTER', 'FAILOVER');
      await Promise.all([won, demoted]);
      return { from, to: replica.address };
    },
    stop: () => nodes.stop(),
  };
  await cluster.waitUntilOk();
  return cluster;
}

/** The cluster state a node's log last reported (`ok`, `fail`), undefined before any change. */
function clusterState(log: readonly string[]): string | undefined {
  for (let i = log.length - 1; i >= 0; i--) {
    const change = /Cluster state changed: (\w+)/.exec(log[i]);
    if (change) return change[1];
  }
  return undefined;
}

/** Resolves on the next line `node` logs that matches `pattern` (from now on). */
function nextLine(node: LocalRedisNode, pattern: RegExp): Promise<void> {
  return new Promise((resolve) => {
    const stop = node.onLog((line) => {
      if (!pattern.test(line)) return;
      stop();
      resolve();
    });
  });
}
