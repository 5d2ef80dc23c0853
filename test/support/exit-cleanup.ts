import * as fs from 'node:fs';

// Safety net for a crashed or forgotten test: when the test process exits without stop(), SIGKILL every
// redis-server we spawned that is still alive and remove its working directory, so nothing outlives the run.
const pids = new Set<number>();
const dirs = new Set<string>();
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', () => {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGCONT'); // harmless if not stopped; SIGKILL works on stopped ones anyway
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });
}

export function killOnExit(pid: number): void {
  install();
  pids.add(pid);
}

export function forgetPid(pid: number): void {
  pids.delete(pid);
}

export function removeOnExit(dir: string): void {
  install();
  dirs.add(dir);
}

export function forgetDir(dir: string): void {
  dirs.delete(dir);
}
