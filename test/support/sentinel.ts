import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Redis from 'ioredis';
import { forgetPid, killOnExit, removeOnExit } from './exit-cleanup';
import { findOnPath } from './find-binary';
import { freePort } from './free-port';
import { NodeCommands } from './node-commands';
import { startRedisNodes } from './provision';
import type { RedisNodes } from './types';

/** failover() gives up after this many NOGOODSLAVE refusals (each followed by the sentinel's next INFO of the replica). */
const FAILOVER_ATTEMPTS = 5;

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
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  killOnExit(child.pid!);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Its log, a line each: a sentinel logs each event it sees (+monitor, +slave, +switch-master...).
  const logged: string[] = [];
  const lineListeners = new Set<(line: string) => void>();
  for (const stream of [child.stdout!, child.stderr!]) {
    let partial = '';
    stream.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        logged.push(line);
        for (const listener of [...lineListeners]) listener(line);
      }
    });
  }
  /** The first line logged (so far, or from now on) that matches `pattern`; rejects if the sentinel exits. */
  const line = (pattern: RegExp, from = 0): Promise<string> =>
    new Promise((resolve, reject) => {
      const seen = logged.slice(from).find((l) => pattern.test(l));
      if (seen !== undefined) return resolve(seen);
      const listener = (l: string) => {
        if (!pattern.test(l)) return;
        lineListeners.delete(listener);
        resolve(l);
      };
      lineListeners.add(listener);
      child.once('close', () => reject(new Error(`redis-sentinel exited:\n${logged.join('\n')}`)));
    });
  const admin = () =>
    new Redis({ port: sentinelPort, host: '127.0.0.1', lazyConnect: false, maxRetriesPerRequest: 1 });
  const primaryAddress = async () => {
    const client = admin();
    try {
      const [host, port] = (await client.call('SENTINEL', 'get-master-addr-by-name', name)) as string[];
      return `${host}:${port}`;
    } finally {
      await disconnected(client);
    }
  };
  // Ready once it listens (it logs +monitor for the primary after binding its port) and has seen the replica
  // (+slave, logged as it adds it: SENTINEL replicas lists it from then on).
  await line(new RegExp(`\\+monitor master ${name} `));
  await line(new RegExp(`\\+slave slave 127\\.0\\.0\\.1:${replica.nodes[0].port} `));
  return {
    name,
    sentinelPort,
    primary,
    replica,
    primaryAddress,
    async failover() {
      const before = await primaryAddress();
      const from = logged.length;
      // The sentinel refuses (NOGOODSLAVE) until an INFO reply of the replica showed it in sync with the
      // primary (a replica just added, or the old primary just turned replica): after a refusal, ask again
      // once the sentinel ran its next INFO there (the replica's MONITOR shows it, opened before asking).
      const replicaNode = [primary.nodes[0], replica.nodes[0]].find((n) => `${n.host}:${n.port}` !== before)!;
      for (let attempt = 1; ; attempt++) {
        const commands = await NodeCommands.open([replicaNode]);
        const client = admin();
        try {
          await client.call('SENTINEL', 'failover', name);
          break;
        } catch (error) {
          if (!/NOGOODSLAVE/.test((error as Error).message) || attempt === FAILOVER_ATTEMPTS) throw error;
          await commands.ran(([command]) => command === 'info');
        } finally {
          commands.close();
          await disconnected(client);
        }
      }
      // +switch-master <name> <old ip> <old port> <new ip> <new port>: logged as it switches (it reports the
      // new primary from then on).
      const switched = await line(new RegExp(`\\+switch-master ${name} `), from);
      const [newHost, newPort] = switched.trim().split(' ').slice(-2);
      const now = `${newHost}:${newPort}`;
      if (now === before) throw new Error(`the sentinel switched to the same primary: ${switched}`);
      return now;
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

/** Disconnects `client` and resolves once its socket closed: no connection of the harness outlives its use. */
async function disconnected(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  const ended = new Promise((resolve) => client.once('end', resolve));
  client.disconnect();
  await ended;
}
