import { parentPort } from 'node:worker_threads';
import type { WorkerReply, WorkerTask } from './parallel';
import { sharedClaim } from './parallel';
import { runSchedules } from './runner';

// A pooled worker thread: runs one task at a time, claiming schedules from the task's shared counter.
parentPort?.on('message', (task: WorkerTask) => {
  runSchedules({ ...task.options, claim: sharedClaim(task.next, task.options.count) }).then(
    (summary) => parentPort?.postMessage({ id: task.id, summary } satisfies WorkerReply),
    (error: unknown) =>
      parentPort?.postMessage({
        id: task.id,
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      } satisfies WorkerReply),
  );
});
