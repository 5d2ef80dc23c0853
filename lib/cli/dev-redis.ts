import { spawn, type ChildProcess } from 'node:child_process';
import * as net from 'node:net';
import * as os from 'node:os';

/** Redis nodes for development: their addresses, and a way to stop them. */
export interface DevNodes {
  readonly urls: readonly string[];
  /** Stops the nodes this process started (each waited for until it exited); idempotent. */
  stop(): Promise<void>;
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
  const started: ChildProcess[] = [];
  const stop = () => Promise.all(started.map(stopProcess)).then(() => undefined);
  try {
    const urls: string[] = [];
    for (let i = 0; i < count; i++) {
      const port = basePort === 0 ? await freePort() : basePort + i;
      started.push(await startOne(bin, port));
      urls.push(`redis://localhost:${port}`);
    }
    let stopping: Promise<void> | undefined;
    started.forEach((child, i) =>
      child.once('exit', (code, signal) => {
        if (!stopping) process.stderr.write(`redis-server on ${urls[i]} exited (${signal ?? code})\n`);
      }),
    );
    return { urls, stop: () => (stopping ??= stop()) };
  } catch (error) {
    await stop();
    throw error;
  }
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
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

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

/**
 * Runs `start`, prints `header` and the banner, then waits: SIGINT (Ctrl-C) or SIGTERM stops the nodes and
 * exits 0. The handlers are installed first, so a Ctrl-C during start-up stops what did start.
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
    log(`\n${name}: ${signal}: stopping ${nodes ? nodes.urls.length : 0} node(s)`);
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
}
