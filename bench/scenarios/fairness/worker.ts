import * as readline from 'node:readline';
import { ALL_IMPLEMENTATIONS, BenchLock } from '../../adapters';
import { sleep } from '../../timing';
import {
  Attempt,
  ChildResult,
  ERROR_MARKER,
  FairnessJob,
  GO_PREFIX,
  NO_EXCLUSION,
  READY_MARKER,
  RESULT_MARKER,
  sharedClock,
} from './protocol';

/**
 * Child side of the fairness scenario (processes.ts): one process's workers. The job comes as JSON in argv[2].
 * The child connects, says it is ready, waits for the parent's start line (`go <startAt> <endAt>`), sleeps until
 * startAt, then its workers loop on the resource — acquire, hold, release — until endAt, each call timed on
 * the shared clock. Its last line is the result (or an error line); log lines may come before.
 */

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function lockFor(job: FairnessJob): Promise<BenchLock> {
  if (job.impl === NO_EXCLUSION)
    return {
      name: job.impl as BenchLock['name'],
      acquire: async () => undefined,
      release: async () => undefined,
      holdWhile: (_resource, _ttl, work) => work(),
      teardown: async () => undefined,
    };
  const impl = ALL_IMPLEMENTATIONS.find((candidate) => candidate.name === job.impl);
  if (!impl) throw new Error(`no implementation named ${job.impl}`);
  return impl.setup({ urls: job.urls, waitBudgetMs: job.waitBudgetMs, ttl: job.ttl, retries: job.retries });
}

/** The parent's start line, read from stdin; the child ends if stdin closes first (the parent is gone). */
function startLine(): Promise<{ startAt: number; endAt: number }> {
  return new Promise((resolve) => {
    const lines = readline.createInterface({ input: process.stdin });
    lines.once('line', (line) => {
      const [startAt, endAt] = line.slice(GO_PREFIX.length).split(' ').map(Number);
      resolve({ startAt, endAt });
    });
  });
}

/** One worker: acquire (timing the wait), hold `holdMs`, release, until `endAt`. */
async function loop(lock: BenchLock, job: FairnessJob, worker: number, endAt: number): Promise<Attempt[]> {
  const attempts: Attempt[] = [];
  while (sharedClock() < endAt) {
    const start = sharedClock();
    let handle: unknown;
    try {
      handle = await lock.acquire(job.resource, job.ttl);
    } catch {
      attempts.push([worker, start, sharedClock(), -1]);
      continue;
    }
    const grantedAt = sharedClock();
    await sleep(job.holdMs);
    attempts.push([worker, start, grantedAt, sharedClock()]);
    await lock.release(handle).catch(() => undefined);
  }
  return attempts;
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '') as FairnessJob;
  const lock = await lockFor(job);
  try {
    say(READY_MARKER);
    const { startAt, endAt } = await startLine();
    const lateMs = Math.max(0, sharedClock() - startAt);
    await sleep(Math.max(0, startAt - sharedClock()));
    const first = job.process * job.workers;
    const perWorker = await Promise.all(
      Array.from({ length: job.workers }, (_, w) => loop(lock, job, first + w, endAt)),
    );
    const result: ChildResult = { attempts: perWorker.flat(), lateMs };
    say(`${RESULT_MARKER}${JSON.stringify(result)}`);
  } finally {
    await lock.teardown().catch(() => undefined);
  }
}

if (require.main === module) {
  // The parent keeps stdin open; when it closes (the parent is gone), so does this process.
  process.stdin.on('end', () => process.exit(1));
  main()
    .catch((error: unknown) => {
      say(`${ERROR_MARKER}${String((error as Error).message ?? error).split('\n')[0]}`);
      process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    })
    .finally(() => process.stdin.destroy());
}
