import { execFile, execFileSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { INestApplication, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { SchedulerRegistry } from '@nestjs/schedule';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { valuesOnNodes } from '../nest/helpers';
import { buildLibrary } from '../package/packed-package';
import { RedisNodes, freePort, startRedisNodes, nodeUptimes, waitForNodeAge } from '../support';
import {
  NEST_CLI_COMPILER_OPTIONS,
  Snippet,
  compileSnippets,
  formatReport,
  sectionSnippet,
  snippetFileName,
} from './snippets';

/**
 * README's quick start runs as written: the blocks under "A NestJS app in 5 minutes", "Without Nest" and
 * "Local development and tests", taken from README.md as it stands (a README edit changes what runs here),
 * with only their node addresses — `'redis://localhost:6379'`, `:6380`, `:6381`, each required exactly once —
 * replaced by those of 3 real redis-server nodes, compiled with the TypeScript API as the Nest CLI compiles an
 * app, against the package as `npm run build` builds it (dist and package.json, in a node_modules folder).
 * What the blocks did is read on the nodes themselves, through keyspace notifications: which lock keys were
 * written and deleted, when. Fresh nodes are part of it: the tests block works on them (restartGuard: false),
 * the Without Nest block as pasted is refused there, as README says, and runs once they are past the guard.
 */
const REPO = path.resolve(__dirname, '..', '..');
const README_ADDRESSES = ['redis://localhost:6379', 'redis://localhost:6380', 'redis://localhost:6381'];

/** The block with README's three addresses replaced by `urls`; throws unless each occurs exactly once. */
function withNodes(snippet: Snippet, urls: readonly string[], label: string): Snippet {
  let code = snippet.code;
  README_ADDRESSES.forEach((address, i) => {
    const count = code.split(`'${address}'`).length - 1;
    if (count !== 1) {
      throw new Error(
        `${snippet.file}:${snippet.line}: the block should name '${address}' once, found ${count} times; ` +
          'the quick-start test replaces exactly these addresses with its nodes',
      );
    }
    code = code.replace(`'${address}'`, `'${urls[i]}'`);
  });
  // A file name of its own per variant; the lines stay those of README.md.
  return { ...snippet, file: `${snippet.file}.${label}`, code };
}

interface KeyEvent {
  readonly node: number;
  readonly key: string;
  readonly event: string;
  readonly at: number;
}

const KEYSPACE = '__keyspace@0__:';

/** Keyspace notifications of the `redlock:*` keys, per node, with the time they arrived. */
async function recordKeyEvents(nodes: RedisNodes) {
  const events: KeyEvent[] = [];
  const subscribers: Redis[] = await Promise.all(
    nodes.nodes.map(async (node, index) => {
      const admin = node.redis();
      try {
        await admin.config('SET', 'notify-keyspace-events', 'K$g'); // string (SET) and generic (DEL) events
      } finally {
        admin.disconnect();
      }
      const subscriber = node.redis();
      subscriber.on('pmessage', (_pattern: string, channel: string, event: string) =>
        events.push({ node: index, key: channel.slice(KEYSPACE.length), event, at: Date.now() }),
      );
      await subscriber.psubscribe(`${KEYSPACE}redlock:*`);
      return subscriber;
    }),
  );
  return {
    events,
    /**
     * Resolves once every notification of commands that ran before it was called has arrived: a PING on a
     * subscriber connection is answered after the messages queued before it.
     */
    settle: () => Promise.all(subscribers.map((subscriber) => subscriber.ping())).then(() => undefined),
    /** Per node, the SET and DEL events of `key`, in order. */
    sequence: (key: string) =>
      nodes.nodes.map((_, node) =>
        events
          .filter((e) => e.node === node && e.key === key && /^(set|del)$/.test(e.event))
          .map((e) => e.event),
      ),
    /** Per node, the intervals [SET, DEL] during which `key` existed. */
    held: (key: string) =>
      nodes.nodes.map((_, node) => {
        const intervals: { from: number; to: number }[] = [];
        for (const e of events.filter((x) => x.node === node && x.key === key)) {
          if (e.event === 'set') intervals.push({ from: e.at, to: Infinity });
          if (e.event === 'del' && intervals.length) intervals[intervals.length - 1].to = e.at;
        }
        return intervals;
      }),
    stop: () => subscribers.forEach((subscriber) => subscriber.disconnect()),
  };
}

interface Run {
  readonly code: number | null;
  readonly output: string;
  readonly elapsed: number;
}

/** `node <file>` as a user runs the compiled block, with its exit code and output. */
function runNode(file: string, started: (child: ChildProcess) => void = () => undefined): Promise<Run> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [file],
      { cwd: path.dirname(file), env: { ...process.env, NODE_OPTIONS: '' }, timeout: 30_000 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? ((error as { code?: unknown }).code as number | null) : 0,
          output: `${stdout}${stderr}`,
          elapsed: Date.now() - t0,
        }),
    );
    started(child);
  });
}

/**
 * Collects what Nest logs at warn and error level (the apps' Redlock logger is Nest's), and debug lines in
 * `quiet` when given (a method's second skipped tick in a row is said at debug level).
 */
function capturingLogger(lines: string[], quiet?: string[], logged?: () => void): LoggerService {
  const push = (to: string[] | undefined, line: string) => {
    to?.push(line);
    logged?.();
  };
  return {
    log: () => undefined,
    debug: (message: unknown) => push(quiet, `debug: ${String(message)}`),
    verbose: () => undefined,
    warn: (message: unknown) => push(lines, `warn: ${String(message)}`),
    error: (message: unknown) => push(lines, `error: ${String(message)}`),
  };
}

describe("README's quick start, run against 3 real nodes", () => {
  let nodes: RedisNodes;
  let dir: string;
  let readme: string;
  /** Compiled JavaScript of each block, by variant. */
  const js: Record<'nest' | 'standalone' | 'standaloneUnreachable' | 'tests', string> = {
    nest: '',
    standalone: '',
    standaloneUnreachable: '',
    tests: '',
  };
  let unreachable: Promise<Run>;
  let unreachableChild: ChildProcess | undefined;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    nodes = await startRedisNodes(3);
    readme = fs.readFileSync(path.join(REPO, 'README.md'), 'utf8');
    const nest = sectionSnippet('README.md', readme, 'A NestJS app in 5 minutes');
    const standalone = sectionSnippet('README.md', readme, 'Without Nest');
    const tests = sectionSnippet('README.md', readme, 'Local development and tests');
    const closed = [await freePort(), await freePort(), await freePort()].map(
      (p) => `redis://127.0.0.1:${p}`,
    );
    const variants = {
      nest: withNodes(nest, nodes.urls, 'nodes'),
      standalone: withNodes(standalone, nodes.urls, 'nodes'),
      standaloneUnreachable: withNodes(standalone, closed, 'unreachable'),
      tests,
    };

    // The package as `npm run build` builds it, where Node and TypeScript resolve 'nestjs-redlock' from the
    // blocks' folder; inside the repository, so that the blocks and the package find @nestjs/* and ioredis.
    dir = fs.mkdtempSync(path.join(REPO, '.snippets-quick-start-'));
    const pkg = path.join(dir, 'node_modules', 'nestjs-redlock');
    buildLibrary(path.join(pkg, 'dist'));
    fs.copyFileSync(path.join(REPO, 'package.json'), path.join(pkg, 'package.json'));
    // The `nestjs-redlock/core` entry for resolvers that do not read "exports" (node10, what Nest CLI apps use).
    fs.mkdirSync(path.join(pkg, 'core'));
    fs.copyFileSync(path.join(REPO, 'core', 'package.json'), path.join(pkg, 'core', 'package.json'));
    // A package of its own, as an app is: inside the repository's, Node would resolve 'nestjs-redlock' to the
    // repository itself (a package importing its own name) instead of node_modules.
    fs.writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'quick-start-app', private: true }),
    );
    // Both loaders find the built copy: Node for the Without Nest block, Jest's for the Nest blocks.
    const built = path.join(pkg, 'dist', 'index.js');
    const byNode = execFileSync(process.execPath, ['-p', "require.resolve('nestjs-redlock')"], { cwd: dir });
    expect([byNode.toString().trim(), require.resolve('nestjs-redlock', { paths: [dir] })]).toEqual([
      built,
      built,
    ]);
    const result = compileSnippets(dir, Object.values(variants), {
      ...NEST_CLI_COMPILER_OPTIONS,
      noEmit: false,
    });
    expect(formatReport(result.errors)).toBe('');
    expect(result.other).toEqual([]);
    for (const [name, snippet] of Object.entries(variants)) {
      js[name as keyof typeof js] = path.join(dir, snippetFileName(snippet).replace(/\.ts$/, '.js'));
    }
    // The negative control takes ~10 s (connect, then `wait`, against closed ports): started now, read last.
    unreachable = runNode(js.standaloneUnreachable, (child) => (unreachableChild = child));
    // The two blocks that run first need the nodes past their restart guard: the NestJS block's window is its
    // ttl, 5 s, the Without Nest block's the default ttl, 10 s. The compilation above usually took longer.
    await waitForNodeAge(nodes, 10_000);
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(apps.map((app) => app.close()));
    if (unreachableChild && unreachableChild.exitCode === null) unreachableChild.kill('SIGKILL');
    await nodes?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  // The two blocks that need nodes past the restart guard come first, on the nodes started before the
  // compilation (past the guards by now: the beforeAll waited for it); the blocks for fresh nodes then restart
  // them.
  it('the NestJS block: two instances pay one order in turn, transfer locks both accounts, the cron runs once per tick', async () => {
    const { AppModule, OrdersService } = require(js.nest);
    // ttl 5 s in the block: calls wait out the guard's rest; the nodes are past it (beforeAll) so no call waits.
    const recorder = await recordKeyEvents(nodes);
    const logged: string[] = [];
    const quiet: string[] = [];
    // Checked at each line logged: resolves a wait for a line (see the cron part below).
    let onLine = () => undefined as void;
    try {
      for (let i = 0; i < 2; i++) {
        const app = await NestFactory.create(AppModule, {
          logger: capturingLogger(logged, quiet, () => onLine()),
        });
        apps.push(app);
        await app.init();
      }

      // pay(): the route of the block, on both instances at once.
      const t0 = Date.now();
      const answers = await Promise.all(
        apps.map((app) => request(app.getHttpServer()).post('/orders/42/pay')),
      );
      const elapsed = Date.now() - t0;
      expect(answers.map((a) => a.status)).toEqual([201, 201]);
      const [first, second] = answers
        .map((a) => a.body)
        .sort((a, b) => Date.parse(a.paidAt) - Date.parse(b.paidAt));
      expect([first.orderId, second.orderId]).toEqual(['42', '42']);
      // The second paid a full second (its own work) after the first: it waited for the first's lock.
      expect(Date.parse(second.paidAt) - Date.parse(first.paidAt)).toBeGreaterThanOrEqual(990);
      expect(elapsed).toBeGreaterThanOrEqual(1_990);
      expect(second.token).toBeGreaterThan(first.token);
      // On the nodes: the fence counter holds the last token, on a quorum at least.
      const fences = await valuesOnNodes(nodes, 'redlock:{order:42}:fence');
      expect(fences.filter((v) => v === String(second.token)).length).toBeGreaterThanOrEqual(2);
      // The lock key existed while each call ran (~1 s each), one holder after the other: on a quorum, two
      // long intervals that do not overlap; on no node do two writes overlap.
      await recorder.settle();
      const held = recorder.held('redlock:{order:42}');
      for (const intervals of held) {
        for (let i = 1; i < intervals.length; i++)
          expect(intervals[i].from).toBeGreaterThanOrEqual(intervals[i - 1].to);
      }
      const long = held.map((intervals) => intervals.filter((x) => x.to - x.from >= 950));
      expect(long.filter((intervals) => intervals.length === 2).length).toBeGreaterThanOrEqual(2);
      expect(await valuesOnNodes(nodes, 'redlock:{order:42}')).toEqual([null, null, null]);

      // transfer(): both accounts locked on every node, then released.
      await expect(apps[0].get(OrdersService).transfer('1', '2')).resolves.toBeUndefined();
      await recorder.settle();
      for (const key of ['redlock:{account:1}', 'redlock:{account:2}']) {
        expect(recorder.sequence(key)).toEqual([
          ['set', 'del'],
          ['set', 'del'],
          ['set', 'del'],
        ]);
      }

      // nightly(): registered with the block's expression on both instances; the next tick runs once.
      const jobs = apps.map((app) => [...app.get(SchedulerRegistry).getCronJobs().values()]);
      expect(jobs.map((list) => list.map((job) => String(job.cronTime.source)))).toEqual([
        ['*/10 * * * * *'],
        ['*/10 * * * * *'],
      ]);
      // The next tick runs once. On a loaded machine a tick may be skipped instead, by design, when too few nodes
      // answer within the node timeout (one warning each): then the next tick is watched, up to three.
      const keptOn = async () =>
        (await valuesOnNodes(nodes, 'redlock:{report:nightly}')).filter((v) => v !== null);
      // Each instance's run of a tick ends in one event of its service: acquired, busy (the other one has it)
      // or unavailable (skipped); by then any key its attempt wrote and gave up is deleted again.
      const services = apps.map(
        (app) =>
          (
            app.get(OrdersService) as {
              redlock: { on(event: string, listener: (e: Outcome) => void): () => void };
            }
          ).redlock,
      );
      type Outcome = { resources: readonly string[] };
      const bothDecided = (tick: number) =>
        Promise.all(
          services.map(
            (service) =>
              new Promise<void>((resolve) => {
                const stops = ['acquired', 'busy', 'unavailable'].map((event) =>
                  service.on(event, ({ resources }) => {
                    if (resources[0] !== 'report:nightly' || Date.now() < tick - 50) return; // an earlier tick's
                    stops.forEach((stop) => stop());
                    resolve();
                  }),
                );
              }),
          ),
        );
      let tick = 0;
      for (let watched = 0; watched < 3; watched++) {
        tick = Math.ceil((Date.now() + 1) / 10_000) * 10_000;
        await bothDecided(tick); // the cron fires at the tick, on the real clock: what is watched here
        if ((await keptOn()).length >= 2) break;
        // A tick that did not run says why: no quorum (warn once, then debug while ticks keep being skipped), or
        // votes that stayed split (warn, after the instance looked for a holder: it may come a moment later).
        const why = /nightly.*(skipped this tick: |did not run this tick here: )/;
        const said = () => [...logged, ...quiet].filter((line) => why.test(line));
        await new Promise<void>((resolve) => {
          onLine = () => void (said().length >= 1 && resolve());
          onLine();
        });
        onLine = () => undefined;
        const skipped = said();
        logged.splice(0, logged.length, ...logged.filter((line) => !skipped.includes(line)));
        quiet.length = 0;
      }
      await recorder.settle();
      const ofTick = recorder.events.filter((e) => e.key === 'redlock:{report:nightly}' && e.at >= tick - 50);
      // Both instances' timers fired for it; one run took the lock and keeps it (not deleted) on a quorum. A
      // node may also show a write undone at once: the other instance's, had the two split the first vote.
      for (const [job] of jobs) expect(job.lastDate()?.getTime()).toBeGreaterThanOrEqual(tick - 50);
      const perNode = nodes.nodes.map((_, n) =>
        ofTick.filter((e) => e.node === n && /^(set|del)$/.test(e.event)).map((e) => e.event),
      );
      for (const sequence of perNode) expect([['set'], ['set', 'del']]).toContainEqual(sequence);
      expect(
        perNode.filter((sequence) => sequence[sequence.length - 1] === 'set').length,
      ).toBeGreaterThanOrEqual(2);
      const kept = await valuesOnNodes(nodes, 'redlock:{report:nightly}');
      expect(new Set(kept.filter((v) => v !== null)).size).toBe(1);
      expect(kept.filter((v) => v !== null).length).toBeGreaterThanOrEqual(2);

      await Promise.all(apps.splice(0).map((app) => app.close()));
      expect(logged).toEqual([]);
    } finally {
      recorder.stop();
    }
  }, 90_000);

  it('the Without Nest block runs to the end once the nodes are past the guard: both accounts, then the order', async () => {
    // The block's window: the default ttl, 10 s (larger than the call's 5 s); the nodes are past it (beforeAll).
    const recorder = await recordKeyEvents(nodes);
    try {
      const run = await runNode(js.standalone);
      // Exit 0 on its own: main() resolved and quit() left nothing open.
      expect({ code: run.code, output: run.output }).toEqual({ code: 0, output: '' });
      await recorder.settle();
      for (const key of ['redlock:{account:1}', 'redlock:{account:2}', 'redlock:{order:42}']) {
        expect(recorder.sequence(key)).toEqual([
          ['set', 'del'],
          ['set', 'del'],
          ['set', 'del'],
        ]);
      }
      const accounts = recorder.events.filter((e) => e.key === 'redlock:{account:1}' && e.event === 'set');
      const order = recorder.events.filter((e) => e.key === 'redlock:{order:42}' && e.event === 'set');
      expect(Math.min(...order.map((e) => e.at))).toBeGreaterThanOrEqual(
        Math.max(...accounts.map((e) => e.at)),
      );
      for (const key of ['redlock:{account:1}', 'redlock:{account:2}', 'redlock:{order:42}']) {
        expect(await valuesOnNodes(nodes, key)).toEqual([null, null, null]);
      }
    } finally {
      recorder.stop();
    }
  }, 30_000);

  it('the tests block locks at once on fresh nodes (restartGuard: false)', async () => {
    await Promise.all(nodes.nodes.map((node) => node.restartEmpty()));
    const { lockingTestModule } = require(js.tests);
    const { moduleRef, redlock } = await lockingTestModule(nodes.urls);
    try {
      const lock = await redlock.acquire('quick-start:test', { wait: 0 });
      expect(await valuesOnNodes(nodes, 'redlock:{quick-start:test}')).toEqual(Array(3).fill(lock.value));
      await lock.release();
      expect(await valuesOnNodes(nodes, 'redlock:{quick-start:test}')).toEqual([null, null, null]);
    } finally {
      await moduleRef.close();
    }
    // They were fresh: inside the 10 s window of the default restart guard.
    expect(Math.max(...(await nodeUptimes(nodes)))).toBeLessThan(5);
  });

  it('the Without Nest block, as pasted, is refused on fresh nodes: the restart guard, named, nothing left', async () => {
    await Promise.all(nodes.nodes.map((node) => node.restartEmpty()));
    const run = await runNode(js.standalone);
    expect(run.code).toBe(1);
    expect(run.output).toContain('QuorumUnavailableError');
    expect(run.output).toMatch(/[23] of 3 nodes refused because of the restart guard/);
    expect(run.output).toMatch(/a quorum takes part again in \d+ ms/); // until when
    // README: it fails at once (the guard ends after `wait`), and nothing is left behind.
    expect(run.elapsed).toBeLessThan(4_000);
    for (const key of ['redlock:{account:1}', 'redlock:{account:2}']) {
      expect(await valuesOnNodes(nodes, key)).toEqual([null, null, null]);
    }
  });

  it('negative control: other addresses than README names fail loudly; the block on closed ports fails', async () => {
    const nest = sectionSnippet('README.md', readme, 'A NestJS app in 5 minutes');
    const moved = {
      ...nest,
      code: nest.code.replace("'redis://localhost:6380'", "'redis://localhost:7380'"),
    };
    expect(() => withNodes(moved, nodes.urls, 'x')).toThrow(/'redis:\/\/localhost:6380' once, found 0 times/);
    expect(() => sectionSnippet('README.md', '# Other\n', 'Without Nest')).toThrow(
      /no heading "Without Nest"/,
    );

    const run = await unreachable;
    expect(run.code).toBe(1);
    expect(run.output).toContain('QuorumUnavailableError');
  }, 30_000);
});
