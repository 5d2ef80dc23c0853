import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { Redis } from 'ioredis';

/**
 * `npm run dev:redis` (scripts/dev-redis.ts), run as package.json says: it prints the forRoot line with the
 * nodes' URLs, the nodes answer PING, and SIGTERM stops them (their ports are closed) and exits 0.
 */
const REPO = path.resolve(__dirname, '..', '..');
const FORROOT = /RedlockModule\.forRoot\(\[([^\]]*)\]\)/;

/** The dev:redis command of package.json, with `node` as this Node binary. */
function devCommand(): { file: string; args: string[] } {
  const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
  const [bin, ...args] = (pkg.scripts['dev:redis'] as string).split(/\s+/);
  expect(bin).toBe('node');
  return { file: process.execPath, args };
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('npm run dev:redis', () => {
  let child: ChildProcess | undefined;
  let exited: Promise<number | null> | undefined;

  afterAll(async () => {
    // Only if a check failed half-way: SIGTERM lets it stop its nodes.
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('prints the forRoot line with nodes that answer, and stops them on SIGTERM', async () => {
    const { file, args } = devCommand();
    child = spawn(file, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    const running = child;
    exited = new Promise((resolve) => running.once('exit', (code) => resolve(code)));
    let output = '';
    running.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const line = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no forRoot line within 30 s:\n${output}`)), 30_000);
      running.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        // The environment line comes after the forRoot line: wait until it is complete.
        const match = /REDLOCK_NODES=\S+\n/.test(output) ? FORROOT.exec(output) : null;
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
      void exited!.then((code) =>
        reject(new Error(`dev:redis exited (${code}) before printing:\n${output}`)),
      );
    });

    const urls = [...line.matchAll(/'(redis:\/\/[^']+)'/g)].map((m) => m[1]);
    expect(urls).toHaveLength(3);
    expect(output).toContain(`REDLOCK_NODES=${urls.join(',')}`);
    const external = /REDLOCK_TEST_NODES/.test(output.split('\n').find((l) => l.includes('node(s)')) ?? '');
    for (const url of urls) {
      const client = new Redis(url, { maxRetriesPerRequest: 1 });
      try {
        expect(await client.ping()).toBe('PONG');
      } finally {
        client.disconnect();
      }
    }

    running.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toContain('dev:redis: stopped');
    const ports = urls.map((url) => Number(new URL(url).port));
    // Nodes it started are gone; nodes listed in REDLOCK_TEST_NODES are someone else's and stay.
    expect(await Promise.all(ports.map(portOpen))).toEqual(ports.map(() => external));
  }, 60_000);
});
