import { ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { HttpClient } from './http';

const TAIL_LIMIT = 8_192;
const STOP_GRACE_MS = 5_000;

/** Instance pids still running, SIGKILLed if the demo process exits without stopping them. */
const alive = new Set<number>();
process.on('exit', () => {
  for (const pid of alive) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** One sample instance: a `node` child process running the compiled `sample/main.js`. */
export class SampleInstance {
  private output = '';
  private exitInfo: string | undefined;
  private stopping = false;
  private readonly exited: Promise<void>;

  private constructor(
    readonly name: string,
    readonly port: number,
    private readonly child: ChildProcess,
  ) {
    const pid = child.pid!;
    alive.add(pid);
    const keep = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      this.output = (this.output + text).slice(-TAIL_LIMIT);
      for (const line of text.split('\n')) {
        if (/\b(ERROR|WARN)\b/.test(line) && this.problems.length < 1_000) {
          this.problems.push({ at: Date.now(), line });
        }
      }
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        alive.delete(pid);
        this.exitInfo = signal ? `signal ${signal}` : `code ${code}`;
        resolve();
      }),
    );
  }

  static start(script: string, name: string, port: number, env: NodeJS.ProcessEnv): SampleInstance {
    const child = spawn(process.execPath, [script], {
      env: { ...env, PORT: String(port), INSTANCE: name },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (child.pid === undefined) throw new Error(`could not start instance ${name}`);
    return new SampleInstance(name, port, child);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  /** It exited without being asked to. */
  get crashed(): boolean {
    return !this.running && !this.stopping;
  }

  /** Why it is not running ('code 1', 'signal SIGKILL'), or undefined while it runs. */
  get exit(): string | undefined {
    return this.exitInfo;
  }

  /** Error and warning lines it printed (all of them, not just the tail), for a failed step's report. */
  readonly problems: { readonly at: number; readonly line: string }[] = [];

  /** The last few KB of what it printed. */
  tail(lines = 20): string {
    return this.output.split('\n').slice(-lines).join('\n');
  }

  /** SIGTERM (Nest closes the app: releases locks, quits Redis, closes SQLite), SIGKILL after a grace. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.stopping = true;
    this.child.kill('SIGTERM');
    const graceful = await Promise.race([this.exited.then(() => true), sleep(STOP_GRACE_MS, false)]);
    if (!graceful) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }
}

/** Instances of the sample on fixed ports, named by letter from `firstName` on, restartable. */
export class SampleFleet {
  instances: SampleInstance[] = [];

  constructor(
    private readonly script: string,
    private readonly ports: readonly number[],
    private readonly baseEnv: NodeJS.ProcessEnv,
    private readonly firstName = 'a',
  ) {}

  get urls(): string[] {
    return this.instances.map((instance) => instance.url);
  }

  /** Starts every instance with `env` on top of the base environment; resolves when all are healthy. */
  async start(env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<void> {
    await this.stop();
    this.instances = this.ports.map((port, i) =>
      SampleInstance.start(this.script, String.fromCharCode(this.firstName.charCodeAt(0) + i), port, {
        ...this.baseEnv,
        ...env,
      }),
    );
    await Promise.all(this.instances.map((instance) => waitHealthy(instance, timeoutMs)));
  }

  async stop(): Promise<void> {
    await Promise.all(this.instances.map((instance) => instance.stop()));
  }

  /** The error and warning lines the instances printed since `since` (epoch ms), by message, most frequent first. */
  problemsSince(since: number): string[] {
    const counts = new Map<string, number>();
    for (const instance of this.instances) {
      for (const { at, line } of instance.problems) {
        if (at < since) continue;
        const key = `${instance.name}: ${line.replace(/^.*?(ERROR|WARN)\s*/, '$1 ')}`.slice(0, 400);
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    }
    return [...counts].sort((x, y) => y[1] - x[1]).map(([text, n]) => (n > 1 ? `${n}× ${text}` : text));
  }

  /** Instances that stopped on their own, with their exit and output: why a step may have failed. */
  crashed(): string[] {
    return this.instances
      .filter((instance) => instance.crashed)
      .map((instance) => `instance ${instance.name} exited (${instance.exit}):\n${instance.tail()}`);
  }
}

/**
 * Polls `GET /health` until it answers 200 with every node that is up past its restart-guard window:
 * new nodes refuse locks for their first `restartGuard` ms, and the instances must not start selling
 * before a quorum takes part.
 */
async function waitHealthy(instance: SampleInstance, timeoutMs: number): Promise<void> {
  const client = new HttpClient();
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  try {
    while (Date.now() < deadline) {
      if (!instance.running) {
        throw new Error(
          `instance ${instance.name} exited (${instance.exit}) while starting:\n${instance.tail()}`,
        );
      }
      try {
        const reply = await client.request('GET', `${instance.url}/health`, undefined, 2_000);
        const nodes: { up: boolean; guardRemaining?: number }[] = reply.body?.details?.redlock?.nodes ?? [];
        if (reply.status === 200 && nodes.every((node) => !node.up || node.guardRemaining === 0)) return;
        last = `GET /health answered ${reply.status}`;
      } catch (error) {
        last = error instanceof Error ? error.message : String(error);
      }
      await sleep(100);
    }
  } finally {
    client.close();
  }
  throw new Error(
    `instance ${instance.name} was not healthy within ${timeoutMs} ms (${last}):\n${instance.tail()}`,
  );
}
