import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Redis } from 'ioredis';
import { forgetDir, removeOnExit } from './exit-cleanup';
import { freePort } from './free-port';
import { PortInUseError, RedisProcess } from './redis-process';
import { ADMIN_CLIENT_OPTIONS, type RedisNodeHandle } from './types';

const START_ATTEMPTS = 5;

/** A node backed by a redis-server child process; survives kill()/start() on the same port. */
export class LocalRedisNode implements RedisNodeHandle {
  readonly host = '127.0.0.1';
  private proc: RedisProcess | undefined;
  private isPaused = false;
  /** What the current process logged, a line each (cleared when it starts again). */
  private logged: string[] = [];
  private readonly lineListeners = new Set<(line: string) => void>();

  /** The line listener of a process about to start: its lines become {@link log}. */
  private nextLog(): (line: string) => void {
    const log: string[] = [];
    this.logged = log;
    return (line) => {
      log.push(line);
      if (this.logged !== log) return; // a late line of a process killed since
      for (const listener of [...this.lineListeners]) listener(line);
    };
  }

  private constructor(
    readonly index: number,
    readonly port: number,
    private readonly bin: string,
    private readonly dir: string,
    private readonly extraArgs: string[],
  ) {}

  /** Start a node on a fresh free port; another process may grab the port first, so retry. */
  static async create(index: number, bin: string, extraArgs: string[] = []): Promise<LocalRedisNode> {
    let lastError: unknown;
    for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
      const port = await freePort();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `redlock-test-${port}-`));
      removeOnExit(dir);
      const node = new LocalRedisNode(index, port, bin, dir, extraArgs);
      try {
        node.proc = await RedisProcess.start({ bin, port, dir, extraArgs, onLine: node.nextLog() });
        return node;
      } catch (error) {
        node.removeDir();
        lastError = error;
        if (!(error instanceof PortInUseError)) throw error;
      }
    }
    throw lastError;
  }

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  get pid(): number | undefined {
    return this.proc?.alive ? this.proc.pid : undefined;
  }

  get running(): boolean {
    return this.proc?.alive ?? false;
  }

  get paused(): boolean {
    return this.running && this.isPaused;
  }

  async kill(): Promise<void> {
    await this.proc?.kill();
    this.isPaused = false;
  }

  async pause(): Promise<void> {
    this.requireRunning('pause');
    this.proc!.pause();
    this.isPaused = true;
  }

  async resume(): Promise<void> {
    this.requireRunning('resume');
    this.proc!.resume();
    this.isPaused = false;
  }

  /**
   * Starts the server again on its port. No retry: the old process has exited (kill() waits for it), which
   * frees its listening socket, redis-server binds with SO_REUSEADDR (its closed connections' TIME_WAIT does
   * not block it), and the port is below the ephemeral range (freePort), so no outgoing connection took it
   * meanwhile. A PortInUseError here means another process bound it on purpose: waiting would not help.
   */
  async start(): Promise<void> {
    if (this.running) throw new Error(`node ${this.index} (port ${this.port}) is already running`);
    this.proc = await RedisProcess.start({
      bin: this.bin,
      port: this.port,
      dir: this.dir,
      extraArgs: this.extraArgs,
      onLine: this.nextLog(),
    });
    this.isPaused = false;
  }

  /** The lines the server's current process logged so far (since its last start). */
  get log(): readonly string[] {
    return this.logged;
  }

  /** Calls `listener` with each line the server logs from now on, across restarts; returns how to stop. */
  onLog(listener: (line: string) => void): () => void {
    this.lineListeners.add(listener);
    return () => this.lineListeners.delete(listener);
  }

  async restartEmpty(): Promise<void> {
    await this.kill();
    await this.start();
  }

  redis(): Redis {
    return new Redis({ host: this.host, port: this.port, ...ADMIN_CLIENT_OPTIONS });
  }

  /** Kill the process and remove its working directory. */
  async dispose(): Promise<void> {
    await this.kill();
    this.removeDir();
  }

  private removeDir(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
    forgetDir(this.dir);
  }

  private requireRunning(op: string): void {
    if (!this.running)
      throw new Error(`cannot ${op} node ${this.index} (port ${this.port}): it is not running`);
  }
}
