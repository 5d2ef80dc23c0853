import { spawn } from 'node:child_process';

/** What one command did. */
export interface Ran {
  readonly command: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
  readonly timedOut: boolean;
}

export interface RunOptions {
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
}

/** Process groups of the commands still running, so an interrupted run can stop them (by pid). */
const running = new Set<number>();

/**
 * Runs a command in its own process group (npm spawns children of its own) and collects its output. On
 * timeout the whole group gets SIGKILL; the promise never rejects.
 */
export function run(cmd: string, args: readonly string[], options: RunOptions): Promise<Ran> {
  const command = [cmd, ...args].join(' ');
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const pid = child.pid;
    if (pid !== undefined) running.add(pid);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(pid);
    }, options.timeoutMs);
    const done = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      if (pid !== undefined) running.delete(pid);
      resolve({ command, code, signal, stdout, stderr, ms: Date.now() - t0, timedOut });
    };
    child.on('error', (error) => {
      stderr += String(error);
      done(null, null);
    });
    child.on('close', done);
  });
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** SIGKILL every command this module started that is still running. */
export function killRunning(): void {
  for (const pid of running) killGroup(pid);
  running.clear();
}

/** A one-line summary of a failed command: its exit status and the last meaningful lines of its output. */
export function failure(ran: Ran, lines = 3): string {
  const status = ran.timedOut ? `timed out after ${ran.ms} ms` : `exit ${ran.code ?? ran.signal}`;
  const tail = `${ran.stdout}\n${ran.stderr}`
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('npm warn'))
    .slice(-lines)
    .join(' | ');
  return `\`${ran.command}\`: ${status}${tail ? ` — ${tail}` : ''}`;
}
