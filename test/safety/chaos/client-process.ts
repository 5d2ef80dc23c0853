import { ChildProcess, fork } from 'node:child_process';
import type { ClientBuild } from './build-client';
import type {
  ClientMessage,
  ClientPhase,
  ClientStats,
  EntryRecord,
  FailureRecord,
  ParentMessage,
  SectionRecord,
  WaitingRecord,
} from './protocol';

/** Every client process still alive, killed by pid if the test process exits without closing them. */
const alive = new Set<number>();
let exitHookInstalled = false;

function killOnExit(pid: number): void {
  alive.add(pid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const each of alive) {
      try {
        process.kill(each, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

/** What a client process reports during one phase. */
export interface PhaseReport {
  sections: SectionRecord[];
  failures: FailureRecord[];
  /** Fair waiting: the places in the queue the client learnt (its `waiting` events). */
  waitings: WaitingRecord[];
  logs: string[];
  stats: ClientStats | undefined;
}

/** The parent's handle on one client process. */
export class ClientProcess {
  private readonly child: ChildProcess;
  private report: PhaseReport = emptyReport();
  private stopped: (() => void) | undefined;
  private phaseConnected: (() => void) | undefined;
  /** Resolves once the current phase's Redlock instance finished connecting (or the phase or process ended). */
  connected: Promise<void> = Promise.resolve();
  private readonly exited: Promise<void>;
  private stderrTail = '';
  private closing = false;
  private onScenario: ((step: 'waiting' | 'done', error?: string) => void) | undefined;
  /** Called for every section the moment it begins. */
  onEntry: ((entry: EntryRecord) => void) | undefined;
  /** Called for every section when it is reported (it ended). */
  onSection: ((section: SectionRecord) => void) | undefined;
  /** Called when the client's event loop was held up (its host is starved). */
  onLag: ((t: number, ms: number) => void) | undefined;
  /** Called when the client's Redlock instance saw a node's wall clock step. */
  onClockStep: ((node: number, step: number) => void) | undefined;
  /** Called when a fair waiter of the client learnt its place in the queue. */
  onWaiting: ((waiting: WaitingRecord) => void) | undefined;
  /** Stopped by SIGSTOP (see {@link pause}). */
  paused = false;

  private constructor(
    readonly index: number,
    build: ClientBuild,
    onFence: (client: number, resource: string, token: number) => boolean,
  ) {
    this.child = fork(build.entry, [], {
      execArgv: [],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env: { ...process.env, NODE_PATH: build.nodePath },
    });
    killOnExit(this.child.pid!);
    const keepTail = (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-4096);
    };
    this.child.stdout!.on('data', keepTail);
    this.child.stderr!.on('data', keepTail);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        alive.delete(this.child.pid!);
        if (!this.closing) {
          this.report.logs.push(
            `client process exited unexpectedly (code ${code}, signal ${signal}):\n${this.stderrTail}`,
          );
        }
        this.stopped?.();
        this.phaseConnected?.();
        resolve();
      });
    });
    this.child.on('message', (message: ClientMessage) => {
      switch (message.type) {
        case 'entered':
          this.onEntry?.(message.entry);
          break;
        case 'section':
          this.report.sections.push(message.section);
          this.onSection?.(message.section);
          break;
        case 'failure':
          this.report.failures.push(message.failure);
          break;
        case 'fence': {
          const accepted = onFence(message.client, message.resource, message.token);
          this.send({ type: 'fenced', seq: message.seq, accepted });
          break;
        }
        case 'connected':
          this.phaseConnected?.();
          break;
        case 'stopped':
          this.report.stats = message.stats;
          this.phaseConnected?.();
          this.stopped?.();
          break;
        case 'log':
          this.report.logs.push(message.message);
          break;
        case 'lag':
          this.onLag?.(message.t, message.ms);
          break;
        case 'clock-step':
          this.onClockStep?.(message.node, message.step);
          break;
        case 'waiting':
          this.report.waitings.push(message.waiting);
          this.onWaiting?.(message.waiting);
          break;
        case 'ready':
          break;
        case 'resubscribe':
          this.onScenario?.(message.step, message.error);
          break;
      }
    });
  }

  /** Forks the process and waits until it has loaded the library and knows its proxies. */
  static async start(
    index: number,
    build: ClientBuild,
    urls: readonly string[],
    base: bigint,
    onFence: (client: number, resource: string, token: number) => boolean,
  ): Promise<ClientProcess> {
    const handle = new ClientProcess(index, build, onFence);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`client ${index} did not start within 60 s:\n${handle.stderrTail}`)),
        60_000,
      );
      handle.child.on('message', (message: ClientMessage) => {
        if (message.type === 'ready') {
          clearTimeout(timer);
          resolve();
        }
      });
      handle.child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`client ${index} exited during start (code ${code}):\n${handle.stderrTail}`));
      });
      handle.send({ type: 'init', client: index, urls, base: base.toString() });
    });
    return handle;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The sections reported so far in the current phase. */
  get sections(): readonly SectionRecord[] {
    return this.report.sections;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGSTOP: the process stops where it is (a waiter stops renewing its tickets, a holder its lock). */
  pause(): void {
    if (!this.running || this.paused) return;
    this.child.kill('SIGSTOP');
    this.paused = true;
  }

  /** SIGCONT. */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    if (this.running) this.child.kill('SIGCONT');
  }

  startPhase(phase: ClientPhase): void {
    this.report = emptyReport();
    this.connected = this.running
      ? new Promise<void>((resolve) => (this.phaseConnected = resolve))
      : Promise.resolve();
    if (!this.running) this.report.logs.push(`client process is gone:\n${this.stderrTail}`);
    this.send({ type: 'phase', phase });
  }

  /**
   * Asks the loop to stop and waits until the client reported its statistics, or died (its exit resolves
   * `stopped` too, and logs it). No deadline of its own: on a loaded machine stopping may take a while (a
   * section in progress finishes first); a client that never stops fails the test by its time limit.
   */
  async stopPhase(): Promise<PhaseReport> {
    if (!this.running) return this.report;
    const done = new Promise<void>((resolve) => (this.stopped = resolve));
    this.send({ type: 'stop' });
    await done;
    this.stopped = undefined;
    return this.report;
  }

  /**
   * Runs the re-subscribe scenario in this client process (see client.ts), calling `meanwhile` while its
   * waiter waits. Resolves how it ended: done, failed with an error, or the process died (with its stderr).
   */
  async resubscribeScenario(
    url: string,
    meanwhile: () => Promise<void>,
  ): Promise<{ outcome: 'done' | 'failed' | 'process died'; detail?: string }> {
    const ended = new Promise<{ outcome: 'done' | 'failed' | 'process died'; detail?: string }>((resolve) => {
      this.exited.then(() => resolve({ outcome: 'process died', detail: this.stderrTail }));
      this.onScenario = (step, error) => {
        if (step === 'waiting') void meanwhile().then(() => this.send({ type: 'continue' }));
        else resolve(error ? { outcome: 'failed', detail: error } : { outcome: 'done' });
      };
    });
    this.send({ type: 'resubscribe', url });
    const result = await ended;
    this.onScenario = undefined;
    return result;
  }

  /**
   * Kills the process (by its pid) and waits for its exit. Everything it reports has been collected by then
   * (each phase ends once its client stopped), so nothing is lost by not letting it exit on its own.
   */
  async close(): Promise<void> {
    this.closing = true;
    if (!this.running) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  private send(message: ParentMessage): void {
    if (this.child.connected) this.child.send(message);
  }
}

function emptyReport(): PhaseReport {
  return { sections: [], failures: [], waitings: [], logs: [], stats: undefined };
}
