import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { Redis } from 'ioredis';
import { RedisNodes, startRedisNodes } from '../support';
import { TreeBuild, transpileTree } from '../support/transpile-tree';

/**
 * `npm run dev:redis` (scripts/dev-redis.ts), run as package.json says, and the package's own command,
 * `nestjs-redlock dev-redis` (lib/cli, the `bin` of package.json): each prints the forRoot line with the
 * nodes' URLs, the nodes answer PING, and SIGTERM stops them (their ports are closed) and exits 0. The
 * command also refuses a port in use, naming it, and stops the nodes it had started; restarts a node empty on
 * `restart <n>` typed on its stdin; and says how many nodes it stops and which had exited before.
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

interface Started {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** Exited, and its output all read. */
  readonly closed: Promise<number | null>;
  /** stdout and stderr so far. */
  output(): string;
}

/** One CONFIG GET value of the node at `url`. */
async function configGet(url: string, name: string): Promise<string> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    const [, value] = (await client.config('GET', name)) as string[];
    return value;
  } finally {
    client.disconnect();
  }
}

/** `stdin: 'pipe'` to type commands into it; otherwise its stdin is /dev/null (at its end at once). */
function start(file: string, args: readonly string[], stdin: 'ignore' | 'pipe' = 'ignore'): Started {
  // Packages (ioredis, for inspect and holders) resolve from the repository, as they would in an app.
  const env = { ...process.env, NODE_PATH: path.join(REPO, 'node_modules') };
  const child = spawn(file, args, { cwd: REPO, env, stdio: [stdin, 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const closed = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, exited, closed, output: () => output };
}

/** The URLs of the forRoot line, once printed (the environment line after it is complete). */
async function forRootUrls(started: Started): Promise<string[]> {
  await outputMatches(started, /REDLOCK_NODES=\S+\n/);
  const match = FORROOT.exec(started.output());
  if (!match) throw new Error(`no forRoot line before the environment line:\n${started.output()}`);
  return [...match[1].matchAll(/'(redis:\/\/[^']+)'/g)].map((m) => m[1]);
}

async function answersPing(url: string): Promise<boolean> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    return (await client.ping()) === 'PONG';
  } finally {
    client.disconnect();
  }
}

const portOf = (url: string) => Number(new URL(url).port);

/**
 * Resolves once the output so far matches `pattern` (checked as each chunk of it comes); rejects when the
 * process exits without it (the test's time limit covers a process that hangs).
 */
function outputMatches(started: Started, pattern: RegExp): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const check = () => {
      if (!pattern.test(started.output())) return;
      done();
      resolve();
    };
    const done = () => {
      started.child.stdout!.off('data', check);
      started.child.stderr!.off('data', check);
    };
    started.child.stdout!.on('data', check);
    started.child.stderr!.on('data', check);
    void started.closed.then((code) => {
      done();
      if (pattern.test(started.output())) resolve();
      else reject(new Error(`exited (${code}) without printing ${pattern}:\n${started.output()}`));
    });
    check();
  });
}

/** A plain client for one node: what it holds and which server process answers (run_id). */
async function withClient<T>(url: string, fn: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  try {
    await client.connect();
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

const runId = (client: Redis) => client.info('server').then((info) => /run_id:(\w+)/.exec(info)![1]);

/** Only if a check failed half-way: SIGTERM lets it stop its nodes. */
async function stopLeftOver(started: Started | undefined): Promise<void> {
  if (started && started.child.exitCode === null && started.child.signalCode === null) {
    started.child.kill('SIGTERM');
    await started.exited;
  }
}

describe('npm run dev:redis', () => {
  let started: Started | undefined;
  afterAll(() => stopLeftOver(started));

  it('prints the forRoot line with nodes that answer, and stops them on SIGTERM', async () => {
    const { file, args } = devCommand();
    started = start(file, args);
    const urls = await forRootUrls(started);
    expect(urls).toHaveLength(3);
    expect(started.output()).toContain(`REDLOCK_NODES=${urls.join(',')}`);
    const nodesLine =
      started
        .output()
        .split('\n')
        .find((l) => l.includes('node(s)')) ?? '';
    const external = /REDLOCK_TEST_NODES/.test(nodesLine);
    for (const url of urls) expect(await answersPing(url)).toBe(true);

    started.child.kill('SIGTERM');
    expect(await started.exited).toBe(0);
    expect(started.output()).toContain('dev:redis: stopped');
    const ports = urls.map(portOf);
    // Nodes it started are gone; nodes listed in REDLOCK_TEST_NODES are someone else's and stay.
    expect(await Promise.all(ports.map(portOpen))).toEqual(ports.map(() => external));
  }, 60_000);
});

describe('nestjs-redlock dev-redis (the package bin)', () => {
  let build: TreeBuild;
  let started: Started | undefined;
  let busy: RedisNodes | undefined;

  beforeAll(() => {
    build = transpileTree(path.join(REPO, 'lib', 'cli', 'index.ts'), 'cli');
  });
  afterAll(async () => {
    await stopLeftOver(started);
    await busy?.stop();
    build?.dispose();
  });

  it("is package.json's bin once built (dist/cli/index.js), a script with a shebang", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
    expect(pkg.bin).toEqual({ 'nestjs-redlock': 'dist/cli/index.js' });
    expect(fs.readFileSync(path.join(REPO, 'lib', 'cli', 'index.ts'), 'utf8')).toMatch(
      /^#!\/usr\/bin\/env node\n/,
    );
  });

  it('starts the nodes on localhost (--port 0: free ports), prints forRoot, stops them on SIGTERM', async () => {
    // README's default ports (6379–6381) may be taken on a test machine: free ones, chosen by the system.
    started = start(process.execPath, [build.entry, 'dev-redis', '--port', '0']);
    const urls = await forRootUrls(started);
    expect(urls).toHaveLength(3);
    expect(urls.every((url) => url.startsWith('redis://localhost:'))).toBe(true);
    for (const url of urls) expect(await answersPing(url)).toBe(true);
    expect(started.output()).toContain('restartGuard: false');
    // Bound to loopback only: the config says so (development nodes have no password).
    const bind = await configGet(urls[0], 'bind');
    expect(bind).toMatch(/^127\.0\.0\.1( -::1)?$/);

    started.child.kill('SIGTERM');
    expect(await started.exited).toBe(0);
    expect(started.output()).toContain('nestjs-redlock dev-redis: stopped');
    expect(await Promise.all(urls.map(portOf).map(portOpen))).toEqual([false, false, false]);
  }, 60_000);

  it('restart <n> on stdin restarts that node empty on its port (new run_id, no data); the others keep theirs', async () => {
    started = start(process.execPath, [build.entry, 'dev-redis', '--port', '0'], 'pipe');
    const urls = await forRootUrls(started);
    // The commands line follows the environment line; on a loaded machine it may arrive a little later.
    await outputMatches(started, /restart <n>, r <n>/);
    expect(started.output()).toContain('restart <n>, r <n>');
    const before = await Promise.all(
      urls.map((url) =>
        withClient(url, async (client) => {
          await client.set('dev-redis:kept', url);
          return runId(client);
        }),
      ),
    );

    started.child.stdin!.write('restart 2\n');
    await outputMatches(started, /node 2 \(\S+\) restarted: no data, a new run_id/);
    expect(started.output()).toContain(`node 2 (${urls[1]}): stopping it, then starting it again empty`);
    expect(started.output()).toMatch(/refuses\s+locks for the restart guard window/);
    expect(started.output()).not.toContain(`redis-server on ${urls[1]} exited`); // asked for, not reported
    const after = await Promise.all(
      urls.map((url) =>
        withClient(url, async (client) => ({
          id: await runId(client),
          kept: await client.get('dev-redis:kept'),
        })),
      ),
    );
    // The restarted node: another server process, its data gone; the others untouched (negative control).
    expect(after[1].id).not.toBe(before[1]);
    expect(after[1].kept).toBeNull();
    expect([after[0], after[2]]).toEqual([
      { id: before[0], kept: urls[0] },
      { id: before[2], kept: urls[2] },
    ]);

    // The short form, and lines it does not take: said so, nothing stopped.
    started.child.stdin!.write('r 9\nrestart two\n');
    await outputMatches(started, /unknown command: restart two/);
    expect(started.output()).toContain('no node 9: nodes 1 to 3');
    started.child.stdin!.write('r 1\n');
    await outputMatches(started, /node 1 \(\S+\) restarted/);
    expect(await withClient(urls[0], runId)).not.toBe(before[0]);

    // stdin at its end: no more commands, the nodes keep running until SIGTERM. Once our end of the pipe is
    // closed the end is there to read; the child's event loop takes it before the SIGTERM sent after the pings
    // (it hears of both through the same poll, in the order they came).
    const stdinClosed = new Promise((resolve) => started!.child.stdin!.once('close', resolve));
    started.child.stdin!.end();
    await stdinClosed;
    for (const url of urls) expect(await answersPing(url)).toBe(true);
    started.child.kill('SIGTERM');
    expect(await started.exited).toBe(0);
    expect(started.output()).toContain('SIGTERM: stopping 3 node(s)\n');
    expect(await Promise.all(urls.map(portOf).map(portOpen))).toEqual([false, false, false]);
  }, 60_000);

  it('says how many nodes it stops, and which had exited before', async () => {
    started = start(process.execPath, [build.entry, 'dev-redis', '--port', '0']);
    const urls = await forRootUrls(started);
    // Two nodes die by themselves (killed by their pid, as by a crash or the OOM killer).
    for (const url of urls.slice(0, 2)) {
      const pid = await withClient(url, (client) =>
        client.info('server').then((info) => Number(/process_id:(\d+)/.exec(info)![1])),
      );
      process.kill(pid, 'SIGKILL');
      await outputMatches(started, new RegExp(`redis-server on ${url} exited \\(SIGKILL\\)`));
    }
    started.child.kill('SIGTERM');
    expect(await started.exited).toBe(0);
    expect(started.output()).toContain(
      `SIGTERM: stopping 1 node(s); 2 had already exited (${urls[0]}, ${urls[1]})\n`,
    );
    expect(await Promise.all(urls.map(portOf).map(portOpen))).toEqual([false, false, false]);
  }, 60_000);

  it('refuses a port in use, names it, and stops the nodes it had started (negative control)', async () => {
    // The first node goes to port − 1, the second finds the busy one. Another process (a parallel test file)
    // may take port − 1 between the two: then the scenario did not happen, and it is set up again.
    for (let round = 1; ; round++) {
      busy = await startRedisNodes(1);
      const port = busy.nodes[0].port;
      const run = start(process.execPath, [
        build.entry,
        'dev-redis',
        '--nodes',
        '2',
        '--port',
        String(port - 1),
      ]);
      expect(await run.exited).toBe(1);
      const output = run.output();
      const strangerTookFirst =
        output.includes(`Failed listening on port ${port - 1}`) ||
        output.includes(`port ${port - 1} is already in use`);
      if (strangerTookFirst && round < 3) {
        await busy.stop();
        continue;
      }
      expect(output).toContain(`port ${port} is already in use`);
      expect(await portOpen(port - 1)).toBe(false);
      expect(await answersPing(busy.nodes[0].url)).toBe(true); // someone else's node, left alone
      return;
    }
  }, 60_000);

  it('prints its usage, and fails on an unknown option', async () => {
    const help = start(process.execPath, [build.entry, '--help']);
    expect(await help.exited).toBe(0);
    expect(help.output()).toMatch(/^Usage: nestjs-redlock dev-redis/);
    const ownHelp = start(process.execPath, [build.entry, 'dev-redis', '--help']);
    expect(await ownHelp.exited).toBe(0);
    expect(ownHelp.output()).toMatch(/^Usage: nestjs-redlock dev-redis/);
    expect(ownHelp.output()).toContain('restart <n>, r <n>');
    const wrong = start(process.execPath, [build.entry, 'dev-redis', '--nodes', 'many']);
    expect(await wrong.exited).toBe(1);
    expect(wrong.output()).toContain('--nodes must be a whole number from 1 to 9, got "many"');
  });
});
