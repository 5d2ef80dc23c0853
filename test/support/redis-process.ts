import { spawn, type ChildProcess } from 'node:child_process';
import { forgetPid, killOnExit } from './exit-cleanup';
import { probeServerPid } from './probe';
import { delay as sleep } from './waits';

/** Thrown when redis-server exits at startup because its port is taken; callers may retry. */
export class PortInUseError extends Error {}

const TAIL_LIMIT = 4096;
const STARTUP_TIMEOUT_MS = 10_000;

export interface RedisProcessOptions {
  bin: string;
  port: number;
  /** Working directory for the server, so a stray dump.rdb from elsewhere is never loaded. */
  dir: string;
  extraArgs?: string[];
}

/** One spawned redis-server process: no persistence, bound to 127.0.0.1, foreground. */
export class RedisProcess {
  private tailText = '';
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {
    const pid = child.pid!;
    killOnExit(pid);
    const keepTail = (chunk: Buffer): void => {
      this.tailText = (this.tailText + chunk.toString('utf8')).slice(-TAIL_LIMIT);
    };
    // Always drain both pipes: a full pipe would block redis on its own log writes.
    child.stdout!.on('data', keepTail);
    child.stderr!.on('data', keepTail);
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        forgetPid(pid);
        this.exitInfo = { code, signal };
        resolve();
      });
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  get alive(): boolean {
    return this.exitInfo === undefined;
  }

  /** Last few KB of the server's stdout+stderr, for error messages. */
  tail(): string {
    return this.tailText;
  }

  /** Spawn and wait until it answers (INFO, like PING, but also proving the answer comes from our pid). Throws PortInUseError if the port is taken. */
  static async start(options: RedisProcessOptions): Promise<RedisProcess> {
    const args = [
      '--port',
      String(options.port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'no',
      '--daemonize',
      'no',
      '--maxmemory-policy',
      'noeviction',
      '--dir',
      options.dir,
      ...(options.extraArgs ?? []),
    ];
    const child = spawn(options.bin, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: false });
    if (child.pid === undefined) {
      // spawn failure (ENOENT etc.) is reported asynchronously on 'error'.
      const error = await new Promise<Error>((resolve) => child.once('error', resolve));
      throw new Error(`could not spawn ${options.bin}: ${error.message}`);
    }
    const proc = new RedisProcess(child, options.port);
    await proc.waitForPing();
    return proc;
  }

  private async waitForPing(): Promise<void> {
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!this.alive) {
        if (/address already in use/i.test(this.tailText)) {
          throw new PortInUseError(`port ${this.port} is already in use`);
        }
        throw new Error(
          `redis-server on port ${this.port} exited during startup ` +
            `(code ${this.exitInfo?.code}, signal ${this.exitInfo?.signal}). Output tail:\n${this.tailText}`,
        );
      }
      // Answering at all means it is up (PING would do); the pid proves it is ours.
      if ((await probeServerPid(this.port, '127.0.0.1', 250)) === this.pid) return;
      await sleep(10);
    }
    await this.kill();
    throw new Error(
      `redis-server on port ${this.port} did not answer PING within ${STARTUP_TIMEOUT_MS} ms. ` +
        `Output tail:\n${this.tailText}`,
    );
  }

  pause(): void {
    if (this.alive) this.child.kill('SIGSTOP');
  }

  resume(): void {
    if (this.alive) this.child.kill('SIGCONT');
  }

  /** SIGKILL (after SIGCONT, in case it is stopped) and wait for the exit, which frees the port. */
  async kill(): Promise<void> {
    if (this.alive) {
      this.child.kill('SIGCONT');
      this.child.kill('SIGKILL');
    }
    await this.exited;
  }
}
