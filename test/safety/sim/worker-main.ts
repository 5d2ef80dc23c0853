import { parentPort } from 'node:worker_threads';
import type { WorkerReply, WorkerTask } from './parallel';
import { sharedClaim } from './parallel';
import { runSchedules } from './runner';

// Bulk schedules read their errors' messages only (votes, findings); a failing seed is replayed, with stacks,
// by the CLI. Capturing a stack for every refused or lost message costs a few per cent of the run.
Error.stackTraceLimit = 0;

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
