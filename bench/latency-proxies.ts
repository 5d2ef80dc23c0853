import { ChildProcess, spawn } from 'node:child_process';
import * as readline from 'node:readline';
import { startTcpProxy } from '../test/support/tcp-proxy';

/**
 * TCP proxies with a fixed added latency (each way) in front of Redis nodes, run in a child process: the
 * proxies' own work is then neither counted as the client's CPU nor competing with its event loop.
 */
export interface LatencyProxies {
  /** redis:// URLs of the proxies, aligned with the target ports. */
  readonly urls: readonly string[];
  stop(): Promise<void>;
}

export async function startLatencyProxies(
  targets: readonly { host: string; port: number }[],
  latencyMs: number,
): Promise<LatencyProxies> {
  // Plain JavaScript (transpiled once): ts-node in the child costs over a second of CPU.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { transpileTree } =
    require('../test/support/transpile-tree') as typeof import('../test/support/transpile-tree');
  const build = transpileTree(__filename, 'latency-proxies');
  const child: ChildProcess = spawn(
    process.execPath,
    [build.entry, String(latencyMs), JSON.stringify(targets)],
    { stdio: ['pipe', 'pipe', 'inherit'], cwd: __dirname },
  );
  child.once('exit', () => build.dispose());
  const lines = readline.createInterface({ input: child.stdout! });
  const ports = await new Promise<number[]>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`latency proxies exited (${code}) before listening`)));
    lines.once('line', (line) => resolve(JSON.parse(line) as number[]));
  });
  return {
    urls: ports.map((port) => `redis://127.0.0.1:${port}`),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin!.end();
      }),
  };
}

/** Child side: start the proxies, print their ports as one JSON line, stop when stdin closes. */
async function childMain(): Promise<void> {
  const latency = Number(process.argv[2]);
  const targets = JSON.parse(process.argv[3]) as { host: string; port: number }[];
  const proxies = await Promise.all(targets.map((t) => startTcpProxy(t.port, t.host)));
  for (const proxy of proxies) proxy.setLatency(latency);
  process.stdout.write(`${JSON.stringify(proxies.map((proxy) => proxy.port))}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => {
    void Promise.all(proxies.map((proxy) => proxy.close().catch(() => undefined))).then(() =>
      process.exit(0),
    );
  });
}

if (require.main === module) {
  childMain().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
