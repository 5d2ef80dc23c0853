import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Redis from 'ioredis';
import { forgetPid, killOnExit, removeOnExit } from './exit-cleanup';
import { findOnPath } from './find-binary';
import { freePort } from './free-port';
import { startRedisNodes } from './provision';
import type { RedisNodes } from './types';

/** A primary, one replica and one redis-sentinel watching them (quorum 1), all local processes. */
export interface SentinelSet {
  readonly name: string;
  readonly sentinelPort: number;
  readonly primary: RedisNodes;
  readonly replica: RedisNodes;
  /** The address the sentinel currently reports for the primary. */
  primaryAddress(): Promise<string>;
  /** Asks the sentinel to fail over and resolves once it reports the other server as primary. */
  failover(): Promise<string>;
  stop(): Promise<void>;
}

export async function startSentinelSet(name = 'lockprimary'): Promise<SentinelSet> {
  const bin = findOnPath('redis-sentinel') ?? findOnPath('redis-server');
  if (!bin) throw new Error('redis-sentinel is not installed (Debian: apt-get install redis-sentinel)');
  const primary = await startRedisNodes(1);
  const primaryPort = Number(new URL(primary.urls[0]).port);
  const replica = await startRedisNodes(1, { extraArgs: ['--replicaof', '127.0.0.1', String(primaryPort)] });
  const sentinelPort = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nestjs-redlock-sentinel-'));
  removeOnExit(dir);
  const conf = path.join(dir, 'sentinel.conf');
  fs.writeFileSync(
    conf,
    [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 1`,
      `sentinel down-after-milliseconds ${name} 1000`,
      `sentinel failover-timeout ${name} 5000`,
      `sentinel parallel-syncs ${name} 1`,
      '',
    ].join('\n'),
  );
  const args = bin.endsWith('redis-sentinel') ? [conf] : [conf, '--sentinel'];
  const child = spawn(bin, args, { stdio: 'ignore' });
  killOnExit(child.pid!);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const admin = () =>
    new Redis({ port: sentinelPort, host: '127.0.0.1', lazyConnect: false, maxRetriesPerRequest: 1 });
  const primaryAddress = async () => {
    const client = admin();
    try {
      const [host, port] = (await client.call('SENTINEL', 'get-master-addr-by-name', name)) as string[];
      return `${host}:${port}`;
    } finally {
      client.disconnect();
    }
  };
  // Ready once it answers and has seen the replica.
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const client = admin();
      const replicas = (await client
        .call('SENTINEL', 'replicas', name)
        .finally(() => client.disconnect())) as unknown[];
      if (replicas.length > 0) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error('redis-sentinel did not see the replica within 15 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    name,
    sentinelPort,
    primary,
    replica,
    primaryAddress,
    async failover() {
      const before = await primaryAddress();
      // NOGOODSLAVE until the sentinel has seen the replica in sync: retry for a while.
      const asked = Date.now() + 15_000;
      for (;;) {
        const client = admin();
        try {
          await client.call('SENTINEL', 'failover', name);
          break;
        } catch (error) {
          if (!/NOGOODSLAVE/.test((error as Error).message) || Date.now() > asked) throw error;
          await new Promise((resolve) => setTimeout(resolve, 250));
        } finally {
          client.disconnect();
        }
      }
      const until = Date.now() + 20_000;
      for (;;) {
        const now = await primaryAddress();
        if (now !== before) return now;
        if (Date.now() > until) throw new Error('the sentinel did not fail over within 20 s');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async stop() {
      child.kill('SIGKILL');
      await exited;
      forgetPid(child.pid!);
      await replica.stop();
      await primary.stop();
    },
  };
}
