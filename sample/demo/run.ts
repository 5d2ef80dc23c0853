/**
 * `npm run demo`: five Redis nodes, three instances of the sample, six steps that show what the lock does
 * (and what happens without it). Exits 0 when every step showed what it should, 1 otherwise (with the
 * reason); stops everything it started, also on Ctrl-C.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort, startRedisNodes } from '../../test/support';
import { ReportRunsRepository } from '../database/report-runs.repository';
import { SampleDatabase } from '../database/sample-database';
import { StockRepository } from '../database/stock.repository';
import { buildSample } from './build';
import { Cleanup, onTermination } from './cleanup';
import { DemoContext, STOCK, StepResult } from './context';
import { cronTicks } from './cron';
import { exportsAtOnce } from './exports';
import { ExportRunsRepository } from '../database/export-runs.repository';
import { EXPORT_PERMITS } from '../exports/exports.controller';
import { staleWrite } from './fencing';
import { SampleFleet } from './fleet';
import { HttpClient } from './http';
import { FAIL, PASS, bold, dim, line, seconds } from './output';
import { exactlyStock, oversold, purchaseBurst } from './purchases';

const ROOT = path.resolve(__dirname, '..', '..');
const SAMPLE_MODULES = path.join(ROOT, 'sample', 'node_modules');
const NODES = 5;
const INSTANCES = 3;
const PURCHASES = 500;
const LOCK_TTL = 5_000;
const TICKS = 5;
const EXPORTS = 12;
const OVERALL_TIMEOUT_MS = 180_000;

const SOURCES: Record<string, string> = {
  path: 'redis-server on PATH',
  apt: 'redis-server, just installed with apt-get',
  docker: 'Docker, redis:7',
  external: 'REDLOCK_TEST_NODES',
};

const cleanup = new Cleanup();
/** The instances, once created (a step's failure report reads their logs). */
const fleets: SampleFleet[] = [];
const verdicts: { title: string; result: StepResult }[] = [];
const startedAt = Date.now();

async function main(): Promise<void> {
  line(
    bold(`nestjs-redlock demo: ${NODES} Redis nodes, the sample app (NestJS + SQLite) on several instances`),
  );
  line();

  // ------------------------------------------------------------------ setup
  line(bold('Setup'));
  // The demo kills a node: it starts its own, never uses external ones (REDLOCK_TEST_NODES).
  delete process.env.REDLOCK_TEST_NODES;
  const nodes = await startRedisNodes(NODES);
  cleanup.add('Redis nodes', () => nodes.stop());
  line(`  ${NODES} Redis nodes (${SOURCES[nodes.source]}): ${ports(nodes.urls)}`);

  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'nestjs-redlock-demo-'));
  cleanup.add('temporary files', () => fs.rmSync(work, { recursive: true, force: true }));
  let t = Date.now();
  const files = buildSample(ROOT, path.join(work, 'build'));
  line(`  compiled lib/ and sample/ (${files} files) in ${seconds(Date.now() - t)}`);

  const dbFile = path.join(work, 'sample.db');
  const database = SampleDatabase.open(dbFile);
  cleanup.add('database', () => database.close());
  const http = new HttpClient();
  cleanup.add('HTTP client', () => http.close());

  const script = path.join(work, 'build', 'sample', 'main.js');
  const freePorts = () => Promise.all(Array.from({ length: INSTANCES }, () => freePort()));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // The build is outside the repository: better-sqlite3 from sample/'s own folder, the rest from the root.
    NODE_PATH: [SAMPLE_MODULES, path.join(ROOT, 'node_modules')].join(path.delimiter),
    NO_COLOR: '1',
    REDIS_NODES: nodes.urls.join(','),
    DB_FILE: dbFile,
    LOCK_TTL: String(LOCK_TTL),
    NODE_TIMEOUT: '200',
    WORK_MS: '25',
  };
  const fleet = new SampleFleet(script, await freePorts(), env);
  // Step 2's instances: the same build with LOCK_DISABLED=1, started beside the others (no restarts).
  const unlocked = new SampleFleet(script, await freePorts(), env, String.fromCharCode(97 + INSTANCES));
  fleets.push(fleet, unlocked);
  cleanup.add('sample instances', () => Promise.all([fleet.stop(), unlocked.stop()]).then(() => undefined));
  const ctx: DemoContext = {
    nodes,
    fleet,
    http,
    stock: new StockRepository(database),
    runs: new ReportRunsRepository(database),
  };

  t = Date.now();
  await Promise.all([fleet.start({ LOCK_DISABLED: '0' }), unlocked.start({ LOCK_DISABLED: '1' })]);
  const names = (f: SampleFleet) => f.instances.map((i) => `${i.name} :${i.port}`).join(', ');
  line(`  ${INSTANCES * 2} instances healthy in ${seconds(Date.now() - t)}:`);
  line(`    with the lock: ${names(fleet)}`);
  line(`    with LOCK_DISABLED=1, for step 2: ${names(unlocked)}`);
  line(
    dim(
      `  restart guard: a node refuses locks for its first ${LOCK_TTL} ms of uptime (restartGuard = lock ttl);\n` +
        "  the steps start once every instance's GET /health shows every node past it",
    ),
  );

  // ------------------------------------------------------------------ steps
  await step(
    `1. ${PURCHASES} concurrent purchases of ${STOCK} units over ${INSTANCES} instances, lock on`,
    async () => {
      ctx.stock.restock('step1', STOCK);
      return exactlyStock(ctx, 'step1', await purchaseBurst(ctx, 'step1', PURCHASES));
    },
  );

  await step(`2. The same on the ${INSTANCES} instances with the lock switched off`, async () => {
    ctx.stock.restock('step2', STOCK);
    const tally = await purchaseBurst({ ...ctx, fleet: unlocked }, 'step2', PURCHASES);
    await unlocked.stop();
    line(dim('  stopped the instances without the lock; the next steps run on the ones with it'));
    return oversold(ctx, 'step2', tally);
  });

  await step('3. Step 1 again, lock on, with a Redis node killed in the middle', async () => {
    ctx.stock.restock('step3', STOCK);
    const victim = nodes.nodes[NODES - 1];
    let sales = 0;
    let killing: Promise<string> | undefined;
    const kill = () =>
      (killing ??= victim.kill().then(() => `killed node ${victim.index + 1} (:${victim.port}, SIGKILL)`));
    let killedAt: number | undefined;
    const killNow = () => void kill().then(() => (killedAt ??= sales));
    const fallback = setTimeout(killNow, 3_000); // in case the third sale is slow to come
    const tally = await purchaseBurst(ctx, 'step3', PURCHASES, (sold) => {
      sales = sold;
      if (sold === 3) killNow();
    });
    clearTimeout(fallback);
    const killed = await kill();
    const when = killedAt === undefined ? 'after the burst' : `when ${killedAt} of ${STOCK} had sold`;
    line(dim(`  ${killed} ${when}; the rest ran on ${NODES - 1} of ${NODES} nodes`));
    if (killedAt === undefined || killedAt >= STOCK) {
      return {
        ok: false,
        summary: 'the node was not killed in the middle',
        reason: `the node was killed ${when}`,
      };
    }
    return exactlyStock(ctx, 'step3', tally);
  });

  await step(`4. The report job (@Cron every second + @Locked) over ${TICKS} ticks`, () =>
    cronTicks(ctx, TICKS),
  );

  await step('5. A holder paused past its ttl tries a stale write', async () => {
    ctx.stock.restock('step5', STOCK);
    const { result, story } = await staleWrite(ctx, 'step5');
    for (const sentence of story) line(dim(`  ${sentence}`));
    return result;
  });

  await step(
    `6. ${EXPORTS} exports at once, at most ${EXPORT_PERMITS} running across all instances (permits)`,
    () => exportsAtOnce({ ...ctx, exports: new ExportRunsRepository(database) }, EXPORTS),
  );
}

/** Runs one step: title, its output, a ✓/✗ summary with the time it took. */
async function step(title: string, body: () => Promise<StepResult>): Promise<void> {
  line();
  line(bold(title));
  const started = Date.now();
  let result: StepResult;
  try {
    result = await body();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    result = { ok: false, summary: 'could not run', reason };
  }
  verdicts.push({ title, result });
  line(`  ${result.ok ? PASS : FAIL} ${result.summary}  ${dim(seconds(Date.now() - started))}`);
  if (!result.ok) {
    line(`    reason: ${result.reason}`);
    const problems = fleets.flatMap((f) => f.problemsSince(started));
    if (problems.length > 0)
      line(`    what the instances logged:\n      ${problems.slice(0, 8).join('\n      ')}`);
    for (const crash of fleets.flatMap((f) => f.crashed())) line(`    ${crash.replace(/\n/g, '\n      ')}`);
  }
}

function ports(urls: readonly string[]): string {
  return urls.map((url) => `:${new URL(url).port}`).join(' ');
}

/** Stops everything, prints the verdict, sets the exit code. */
async function finish(error?: unknown, signal?: NodeJS.Signals): Promise<never> {
  const stopProblems = await cleanup.run();
  line();
  if (signal) {
    line(`${FAIL} interrupted by ${signal}; stopped everything the demo started`);
    process.exit(130);
  }
  const failed = verdicts.filter((v) => !v.result.ok);
  if (error !== undefined) {
    line(`${FAIL} the demo could not finish: ${error instanceof Error ? error.message : String(error)}`);
  } else if (failed.length === 0) {
    line(
      bold(
        `${PASS} all ${verdicts.length} steps showed what they should, in ${seconds(Date.now() - startedAt)}`,
      ),
    );
  } else {
    line(bold(`${FAIL} ${failed.length} of ${verdicts.length} steps did not show what they should:`));
    for (const { title, result } of failed) line(`  ${title.split('.')[0]}: ${result.reason}`);
  }
  line(dim('stopped the sample instances and the Redis nodes; removed the temporary files'));
  for (const problem of stopProblems) line(`${FAIL} while stopping ${problem}`);
  process.exit(error === undefined && failed.length === 0 && stopProblems.length === 0 ? 0 : 1);
}

onTermination((signal) => void finish(undefined, signal));
setTimeout(
  () => void finish(new Error(`timed out after ${OVERALL_TIMEOUT_MS / 1000} s`)),
  OVERALL_TIMEOUT_MS,
).unref();
main().then(
  () => finish(),
  (error) => finish(error),
);
