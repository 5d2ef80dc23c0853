/**
 * Everything the demo started, stopped in reverse order exactly once: at the end, on an error, or on
 * SIGINT / SIGTERM / SIGHUP. Each task gets a deadline so one stuck stop cannot keep the rest running.
 */
export class Cleanup {
  private readonly tasks: { label: string; stop: () => Promise<void> | void }[] = [];
  private running: Promise<string[]> | undefined;

  add(label: string, stop: () => Promise<void> | void): void {
    this.tasks.push({ label, stop });
  }

  /** Runs every task (last added first); resolves the labels of those that failed. */
  run(timeoutPerTask = 10_000): Promise<string[]> {
    this.running ??= (async () => {
      const failed: string[] = [];
      for (const task of this.tasks.reverse()) {
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('timed out')), timeoutPerTask);
        });
        try {
          await Promise.race([Promise.resolve().then(task.stop), deadline]);
        } catch (error) {
          failed.push(`${task.label}: ${error instanceof Error ? error.message : String(error)}`);
        } finally {
          clearTimeout(timer);
        }
      }
      return failed;
    })();
    return this.running;
  }
}

/**
 * Calls `handler` on the first SIGINT, SIGTERM or SIGHUP. A second one exits at once: the `exit` hooks
 * still SIGKILL the child processes (see fleet.ts and test/support).
 */
export function onTermination(handler: (signal: NodeJS.Signals) => void): void {
  let seen = false;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (seen) process.exit(130);
      seen = true;
      handler(signal);
    });
  }
}
