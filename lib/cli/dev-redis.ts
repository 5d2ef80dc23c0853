import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as readline from 'node:readline';

/** Redis nodes for development: their addresses, and a way to stop them. */
export interface DevNodes {
  readonly urls: readonly string[];
  /** Stops the nodes this process started (each waited for until it exited); idempotent. */
  stop(): Promise<void>;
  /** Whether each node (in the order of `urls`) is still running; absent where the caller cannot tell. */
  running?(): readonly boolean[];
  /** Restarts node `index` (0-based) empty on its port: stops it, waits for its exit, starts it again. */
  restart?(index: number): Promise<void>;
}

const STARTUP_TIMEOUT = 10_000;
/** What redis-server prints once it accepts connections (Redis 5 to 7, Valkey). */
const READY = /Ready to accept connections/;

/**
 * Starts `count` redis-server processes on `localhost`, ports `basePort`, `basePort + 1`, … (`basePort` 0: free
 * ports the system picks), in the foreground, without persistence. A port in use, a missing binary or a server
 * that does not come up stops the ones already started and rejects with a message saying what to do.
 */
export async function startLocalNodes(
  count: number,
  basePort: number,
  bin = 'redis-server',
): Promise<DevNodes> {
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  /** Children stopped from here (stop, restart): their exit is expected, not reported. */
  const stopped = new WeakSet<ChildProcess>();
  const stopChild = (child: ChildProcess) => {
    stopped.add(child);
    return stopProcess(child);
  };
  const stopAll = () => Promise.all(children.map(stopChild)).then(() => undefined);
  try {
    for (let i = 0; i < count; i++) {
      const port = basePort === 0 ? await freePort() : basePort + i;
      children.push(await startOne(bin, port));
      ports.push(port);
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  const urls = ports.map((port) => `redis://localhost:${port}`);
  const watch = (child: ChildProcess, i: number) =>
    child.once('exit', (code, signal) => {
      if (!stopped.has(child))
        process.stderr.write(`redis-server on ${urls[i]} exited (${signal ?? code})\n`);
    });
  children.forEach(watch);
  let stopping: Promise<void> | undefined;
  // One restart at a time; stop() waits for it, so a node started by a restart is not left running.
  let restarting: Promise<void> = Promise.resolve();
  const restart = (index: number): Promise<void> => {
    if (stopping) return Promise.reject(new Error('the nodes are stopping'));
    const run = restarting.then(async () => {
      await stopChild(children[index]);
      const child = await startOne(bin, ports[index]);
      children[index] = child;
      watch(child, index);
    });
    restarting = run.catch(() => undefined);
    return run;
  };
  return {
    urls,
    stop: () => (stopping ??= restarting.then(stopAll)),
    running: () => children.map(isRunning),
    restart,
  };
}

async function startOne(bin: string, port: number): Promise<ChildProcess> {
  if (await answers(port)) {
    throw new Error(
      `port ${port} is already in use (a Redis running as a service?): stop it, or pick other ports with --port`,
    );
  }
  // No persistence (nothing to restore after a restart), noeviction (evicted lock keys break exclusion).
  const args = [
    '--port',
    String(port),
    // Loopback only: development nodes without a password must not be reachable from the network.
    '--bind',
    '127.0.0.1 -::1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--maxmemory-policy',
    'noeviction',
  ];
  args.push('--dir', os.tmpdir()); // never loads a stray dump.rdb from the current folder
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise<ChildProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`redis-server on port ${port} was not ready within ${STARTUP_TIMEOUT} ms:\n${output}`),
      );
    }, STARTUP_TIMEOUT);
    const onData = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4096);
      if (READY.test(output)) {
        clearTimeout(timer);
        output = '';
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(error.code === 'ENOENT' ? new Error(notFound(bin)) : error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(
          `redis-server on port ${port} exited (${signal ?? code}) while starting:\n${output.trim()}`,
        ),
      );
    });
  });
}

const notFound = (bin: string) =>
  `${bin} is not on the PATH. Install Redis (Debian/Ubuntu: sudo apt-get install redis-server, macOS: ` +
  'brew install redis), or start three containers: docker run -d -p 6379:6379 redis:7, then -p 6380:6379 ' +
  'and -p 6381:6379.';

/** SIGTERM (redis-server shuts down at once, saving nothing here), then wait for the exit. */
function stopProcess(child: ChildProcess): Promise<void> {
  if (!isRunning(child)) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

const isRunning = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/** Whether something accepts connections on the port of localhost. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: 'localhost', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** What to paste, printed once the nodes are up. */
export function banner(urls: readonly string[]): string[] {
  return [
    `  RedlockModule.forRoot([${urls.map((url) => `'${url}'`).join(', ')}])`,
    '',
    `  or in the environment: REDLOCK_NODES=${urls.join(',')}`,
    '',
    'Fresh nodes refuse locks for their first ttl (the restart guard, 10 s by default): wait that long, or',
    'pass { restartGuard: false } while you try things out and in tests that start fresh nodes.',
  ];
}

/** What the stop says: how many nodes it stops, and which had exited before (crashed, killed, SHUTDOWN). */
function stoppingLine(nodes: DevNodes | undefined): string {
  if (!nodes) return 'stopping 0 node(s)';
  const running = nodes.running?.() ?? nodes.urls.map(() => true);
  const exited = nodes.urls.filter((_, i) => !running[i]);
  const stopping = nodes.urls.length - exited.length;
  if (exited.length === 0) return `stopping ${stopping} node(s)`;
  const before = `${exited.length} had already exited (${exited.join(', ')})`;
  return stopping === 0 ? `no node left to stop: ${before}` : `stopping ${stopping} node(s); ${before}`;
}

/** The commands read from stdin while the nodes run, for the banner and `help`. */
const COMMANDS = [
  'Type a command and Enter:',
  '  restart <n>, r <n>   restart node <n> (1 is the first URL) empty, on the same port: as after a crash',
  '                       that lost its data, it refuses locks for the restart guard window',
  '  help                 these commands',
];

/**
 * Reads commands from stdin (one a line) and runs them one after another. A stdin at its end or failing only
 * ends the commands; the nodes keep running until SIGINT or SIGTERM.
 */
function readCommands(
  urls: readonly string[],
  restart: (index: number) => Promise<void>,
  log: (line?: string) => void,
): void {
  const input = readline.createInterface({ input: process.stdin, terminal: false });
  process.stdin.on('error', () => input.close());
  let queue = Promise.resolve();
  const run = async (line: string) => {
    const [command, arg, ...rest] = line.trim().split(/\s+/);
    if (!command) return;
    const n = Number(arg);
    if ((command === 'restart' || command === 'r') && rest.length === 0 && Number.isInteger(n)) {
      if (n < 1 || n > urls.length) return log(`no node ${arg}: nodes 1 to ${urls.length}`);
      const url = urls[n - 1];
      log(`node ${n} (${url}): stopping it, then starting it again empty on the same port`);
      try {
        await restart(n - 1);
      } catch (error) {
        return log(`node ${n} (${url}) was not restarted: ${(error as Error).message}`);
      }
      log(`node ${n} (${url}) restarted: no data, a new run_id. Unless restartGuard is false, it refuses`);
      log("locks for the restart guard window (by default the larger of the ttl and the call's ttl: 10 s at");
      log('the defaults); the other nodes still make a quorum — restart a second one to see acquire() fail.');
      return;
    }
    if (command !== 'help' && command !== 'h' && command !== '?') log(`unknown command: ${line.trim()}`);
    for (const text of COMMANDS) log(text);
  };
  input.on('line', (line) => (queue = queue.then(() => run(line))));
}

/**
 * Runs `start`, prints `header` and the banner, then waits, reading commands from stdin (restart a node):
 * SIGINT (Ctrl-C) or SIGTERM stops the nodes and exits 0. The handlers are installed first, so a Ctrl-C
 * during start-up stops what did start.
 */
export async function serveNodes(
  name: string,
  start: () => Promise<DevNodes>,
  header: (nodes: DevNodes) => string,
  notes: readonly string[] = [],
): Promise<void> {
  const log = (line = '') => process.stdout.write(`${line}\n`);
  let nodes: DevNodes | undefined;
  let signal: NodeJS.Signals | undefined;
  const finish = async () => {
    log(`\n${name}: ${signal}: ${stoppingLine(nodes)}`);
    await nodes?.stop();
    log(`${name}: stopped`);
    process.exit(0);
  };
  const onSignal = (received: NodeJS.Signals) => {
    if (signal) return;
    signal = received;
    if (nodes) void finish(); // else start() is still running: its continuation stops what it started
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  nodes = await start();
  if (signal) return finish();
  log(`${name}: ${header(nodes)}; Ctrl-C stops them.`);
  log();
  for (const line of [...banner(nodes.urls), ...notes]) log(line);
  if (!nodes.restart) return;
  log();
  if (inBackground()) {
    log('Commands (restart a node) are off: this runs in the background, where reading the terminal would');
    log('stop it and its nodes.');
    return;
  }
  for (const line of COMMANDS) log(line);
  readCommands(nodes.urls, nodes.restart, log);
}

/**
 * Whether this is a background job on a terminal (`npx nestjs-redlock dev-redis &`): reading the terminal
 * there stops the process group, nodes included (SIGTTIN). Linux tells through /proc; elsewhere, false.
 */
function inBackground(): boolean {
  if (!process.stdin.isTTY) return false;
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    // After "pid (comm) ": state, ppid, pgrp, session, tty_nr, tpgid (the terminal's foreground group).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[2] !== fields[5];
  } catch {
    return false;
  }
}
