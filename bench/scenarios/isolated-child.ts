import Redis from 'ioredis';
import { ADMIN_CLIENT_OPTIONS } from '../../test/support/types';
import { ALL_IMPLEMENTATIONS, Implementation } from '../adapters';
import { withImplementations } from '../rounds';
import { holdMany } from './held-scale';
import { ERROR_MARKER, IsolatedJob, RESULT_MARKER, encodeRow } from './isolated';
import { measureOne } from './memory';

/**
 * Child side of isolated.ts: one implementation's pass of scenario 7 or 8 in this process of its own. The job
 * comes as JSON in argv[2]; log lines and then one result line (or one error line) go to stdout. Exits by
 * itself once the implementation's and the admin clients are closed.
 */
async function measure(job: IsolatedJob, impl: Implementation, admins: readonly Redis[]) {
  const { scale, urls } = job;
  const options = { urls, waitBudgetMs: scale.contention.waitBudgetMs, ttl: scale.ttl };
  if (job.scenario === 'memory')
    return withImplementations([impl], options, ([lock]) =>
      measureOne(lock, scale.memory, scale.ttl, admins),
    );
  const { ttl, holdMs } = scale.heldScale;
  const row: Record<string, number> = {};
  for (const count of job.counts ?? scale.heldScale.counts) {
    log(`  8 held locks · ${impl.name} · ${count}`);
    // The main set only: scenario 8 uses no other node.
    await Promise.all(admins.map((admin) => admin.flushall()));
    Object.assign(
      row,
      await withImplementations([impl], options, ([lock]) => holdMany(lock, count, ttl, holdMs, admins)),
    );
  }
  return row;
}

function log(message: string): void {
  process.stdout.write(`${message}\n`);
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '') as IsolatedJob;
  const impl = ALL_IMPLEMENTATIONS.find((candidate) => candidate.name === job.impl);
  if (!impl) throw new Error(`no implementation named ${job.impl}`);
  const admins = job.urls.map((url) => new Redis(url, ADMIN_CLIENT_OPTIONS).on('error', () => undefined));
  try {
    log(`${RESULT_MARKER}${encodeRow(await measure(job, impl, admins))}`);
  } finally {
    for (const admin of admins) admin.disconnect();
  }
}

if (require.main === module) {
  // The parent keeps stdin open; when it closes (the parent is gone), so does this process.
  process.stdin.on('end', () => process.exit(1)).resume();
  main()
    .catch((error: unknown) => {
      log(`${ERROR_MARKER}${String((error as Error).message ?? error).split('\n')[0]}`);
      process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    })
    .finally(() => process.stdin.destroy());
}
