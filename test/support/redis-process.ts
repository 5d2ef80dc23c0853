import { spawn, type ChildProcess } from 'node:child_process';
import { forgetPid, killOnExit } from './exit-cleanup';

/** Thrown when redis-server exits at startup because its port is taken; callers may retry. */
export class PortInUseError extends Error {}

const TAIL_LIMIT = 4096;
/** What redis-server (and valkey-server) logs once it listens: `Ready to accept connections` (`tcp` since 7). */
const READY_LINE = /Ready to accept connections/;

export interface RedisProcessOptions {
  bin: string;
  port: number;
  /** Working directory for the server, so a stray dump.rdb from elsewhere is never loaded. */
  dir: string;
  extraArgs?: string[];
  /** Told each line the server logs (stdout and stderr), as it comes. */
  onLine?: (line: string) => void;
}

/** One spawned redis-server process: no persistence, bound to 127.0.0.1, foreground. */
export class RedisProcess {
  private tailText = '';
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private readonly exited: Promise<void>;
  private readonly lineListeners = new Set<(line: string) => void>();

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    onLine: ((line: string) => void) | undefined,
  ) {
    const pid = child.pid!;
    killOnExit(pid);
    if (onLine) this.lineListeners.add(onLine);
    const pipe = () => {
      let partial = '';
      return (chunk: Buffer): void => {
        const text = chunk.toString('utf8');
        this.tailText = (this.tailText + text).slice(-TAIL_LIMIT);
        const lines = (partial + text).split('\n');
        partial = lines.pop()!;
        for (const line of lines) for (const listener of [...this.lineListeners]) listener(line);
      };
    };
    // Always drain both pipes: a full pipe would block redis on its own log writes.
    child.stdout!.on('data', pipe());
    child.stderr!.on('data', pipe());
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

  /**
   * Spawn and wait until it listens (it logs that it is ready: it bound the port, so it is ours that will
   * answer there). Throws PortInUseError if the port is taken (it then exits saying so).
   */
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
    const proc = new RedisProcess(child, options.port, options.onLine);
    await proc.listening();
    return proc;
  }

  /** Resolves once the server logged that it is ready; rejects if it exits first. */
  private listening(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const ready = (line: string) => {
        if (!READY_LINE.test(line)) return;
        this.lineListeners.delete(ready);
        resolve();
      };
      this.lineListeners.add(ready);
      // 'close' (not 'exit'): its last output, which says why, has been read by then.
      this.child.once('close', () => {
        this.lineListeners.delete(ready);
        if (/address already in use/i.test(this.tailText)) {
          reject(new PortInUseError(`port ${this.port} is already in use`));
        }
        reject(
          new Error(
            `redis-server on port ${this.port} exited during startup ` +
              `(code ${this.exitInfo?.code}, signal ${this.exitInfo?.signal}). Output tail:\n${this.tailText}`,
          ),
        );
      });
    });
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
