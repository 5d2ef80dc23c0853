/**
 * Compatibility check (issue 7), not part of `npm test`:
 *
 *   node -r ts-node/register/transpile-only compat/run.ts
 *
 * Builds and packs the library, installs the tarball into throwaway NestJS apps in a temp directory (NestJS 12
 * ESM, NestJS 12 CommonJS, NestJS 11 CommonJS as the control), each with every Redis client in turn, compiles
 * the app with tsc and runs a `@Locked` call and a `using()` call against 3 real Redis nodes (test/support).
 * The clients, and how the app passes its nodes (compat/app/clients/<family>.ts, copied as src/clients.ts):
 *
 *   ioredis5, ioredis6  `redis://` URLs (the library creates ioredis clients)
 *   redis4, redis5,     node-redis `createClient({ url })` clients, unconnected (the module connects them); no
 *   redis6              ioredis installed, and the app checks the library cannot resolve it
 *   iovalkey            `new Valkey(url)` clients; no ioredis installed
 *
 * Each app format gets one directory per client family (ioredis, redis, iovalkey), so the node-redis and
 * iovalkey apps never had ioredis; the second version of a family is installed over the first.
 * Prints a table, writes compat/results.md, stops every node and process it started, and exits non-zero
 * when any combination fails. Diagnostic rows (require(esm) switched off, a prototype ESM build; run in the
 * NestJS 12 ESM app with ioredis; and, for a combination whose tsc failed, the same app compiled with
 * `skipLibCheck: true`) are reported but do not decide the exit code.
 *
 * After each app directory's last client, its toolchain rows (compat/toolchains.ts; counted like the others):
 * the app's tsc 5.9 output run by Bun (`bun dist/main.js`) and by Deno (`deno run -A dist/main.js`, with the
 * app's node_modules), and the app compiled by TypeScript 7's native tsc (library d.ts checked) and run on Node.
 *
 * Environment: COMPAT_VARIANTS=nest12-esm,nest12-cjs,nest11-cjs (default: all),
 * COMPAT_CLIENTS=ioredis5,ioredis6,redis4,redis5,redis6,iovalkey (default: all; COMPAT_IOREDIS=5,6 alone, as
 * before, means ioredis5,ioredis6), COMPAT_TOOLCHAINS=bun,deno,ts7 (default: all; `none` for none),
 * COMPAT_DIAGNOSTICS=0 to skip the diagnostics, COMPAT_KEEP=1 to keep the temp directory.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startRedisNodes } from '../test/support';
import type { RedisNodes } from '../test/support';
import {
  AppRun,
  AppVariant,
  ClientFamily,
  Runtime,
  compileApp,
  explain,
  npmInstall,
  prepareApp,
  runApp,
} from './app';
import { packEsmPrototype } from './esm-prototype';
import { failure, killRunning, run } from './proc';
import { Environment, Row, markdown, textTable } from './report';
import { TOOL_SPECS, Tools, installTools } from './toolchains';

const REPO = path.resolve(__dirname, '..');
const RESULTS = path.join(__dirname, 'results.md');

const VARIANTS: readonly AppVariant[] = [
  { id: 'nest12-esm', nest: '12', type: 'module' },
  { id: 'nest12-cjs', nest: '12', type: 'commonjs' },
  { id: 'nest11-cjs', nest: '11', type: 'commonjs' },
];
interface ClientChoice {
  readonly id: string;
  readonly family: ClientFamily;
  /** What `npm install` gets. */
  readonly spec: string;
  /** The package whose installed version the table shows, and the name it is shown under. */
  readonly pkg: string;
  readonly name: string;
  readonly passedAs: string;
}

const CLIENTS: readonly ClientChoice[] = [
  { id: 'ioredis5', family: 'ioredis', spec: 'ioredis@5', pkg: 'ioredis', name: 'ioredis', passedAs: 'URLs' },
  { id: 'ioredis6', family: 'ioredis', spec: 'ioredis@6', pkg: 'ioredis', name: 'ioredis', passedAs: 'URLs' },
  {
    id: 'redis4',
    family: 'redis',
    spec: 'redis@4',
    pkg: 'redis',
    name: 'node-redis',
    passedAs: '`createClient({ url })`',
  },
  {
    id: 'redis5',
    family: 'redis',
    spec: 'redis@5',
    pkg: 'redis',
    name: 'node-redis',
    passedAs: '`createClient({ url })`',
  },
  {
    id: 'redis6',
    family: 'redis',
    spec: 'redis@6',
    pkg: 'redis',
    name: 'node-redis',
    passedAs: '`createClient({ url })`',
  },
  {
    id: 'iovalkey',
    family: 'iovalkey',
    spec: 'iovalkey',
    pkg: 'iovalkey',
    name: 'iovalkey',
    passedAs: '`new Valkey(url)`',
  },
];

/** The app's toolchain: the TypeScript the repository uses, Node 20 types. */
const TOOLCHAIN = ['typescript@~5.9.3', '@types/node@20'];
/** The other compilers and runtimes (compat/toolchains.ts), each a row per app directory. */
const TOOLCHAINS = ['bun', 'deno', 'ts7'];
/** Node without require(esm), as 20.0–20.18 and 22.0–22.11 are. */
const NO_REQUIRE_ESM = ['--no-experimental-require-module'];

const log = (message: string) => process.stderr.write(`compat: ${message}\n`);
const list = (value: string | undefined, all: readonly string[]) =>
  value
    ? value
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean)
    : [...all];

let nodes: RedisNodes | undefined;
let tmp: string | undefined;

async function main(): Promise<number> {
  const t0 = Date.now();
  const variants = VARIANTS.filter((v) =>
    list(
      process.env.COMPAT_VARIANTS,
      VARIANTS.map((x) => x.id),
    ).includes(v.id),
  );
  const clientIds = process.env.COMPAT_CLIENTS
    ? list(process.env.COMPAT_CLIENTS, [])
    : process.env.COMPAT_IOREDIS
      ? list(process.env.COMPAT_IOREDIS, []).map((major) => `ioredis${major}`)
      : CLIENTS.map((c) => c.id);
  const unknown = clientIds.filter((id) => !CLIENTS.some((c) => c.id === id));
  if (unknown.length > 0) {
    log(`unknown client(s) ${unknown.join(', ')}; known: ${CLIENTS.map((c) => c.id).join(', ')}`);
    return 2;
  }
  const clients = CLIENTS.filter((c) => clientIds.includes(c.id));
  const families = [...new Set(clients.map((c) => c.family))];
  const diagnose = process.env.COMPAT_DIAGNOSTICS !== '0';
  const toolchains = list(process.env.COMPAT_TOOLCHAINS, TOOLCHAINS).filter((t) => t !== 'none');
  const unknownTools = toolchains.filter((t) => !TOOLCHAINS.includes(t));
  if (unknownTools.length > 0) {
    log(`unknown toolchain(s) ${unknownTools.join(', ')}; known: ${TOOLCHAINS.join(', ')}, none`);
    return 2;
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'nestjs-redlock-compat-'));
  tmp = work;
  log(`work directory ${work}`);

  log('npm run build');
  const build = await run('npm', ['run', 'build'], { cwd: REPO, timeoutMs: 300_000 });
  if (build.code !== 0) return abort(`build failed: ${failure(build, 10)}`);
  const pack = await run('npm', ['pack', '--pack-destination', work, '--json'], {
    cwd: REPO,
    timeoutMs: 120_000,
  });
  if (pack.code !== 0) return abort(`npm pack failed: ${failure(pack)}`);
  const [{ filename }] = JSON.parse(pack.stdout) as Array<{ filename: string }>;
  const tarball = path.join(work, filename);
  log(`packed ${filename}`);

  log('starting 3 redis nodes (test/support)');
  nodes = await startRedisNodes(3);
  const urls = nodes.urls;
  const redis = await redisVersion(nodes);

  let tools: Tools | undefined;
  if (toolchains.length > 0) {
    log(`npm install ${TOOL_SPECS.join(' ')} (tools)`);
    tools = await installTools(path.join(work, 'tools'));
  }

  const rows: Row[] = [];
  const diagnostics: Row[] = [];
  for (const variant of variants) {
    const app = variant.type === 'module' ? 'ESM' : 'CommonJS';
    const nest = [
      `@nestjs/common@${variant.nest}`,
      `@nestjs/core@${variant.nest}`,
      'reflect-metadata',
      'rxjs',
    ];
    for (const family of families) {
      // One app per client family: a node-redis or iovalkey app never had ioredis installed.
      const dir = path.join(work, `${variant.id}-${family}`);
      prepareApp(dir, variant, family);
      let installed: string | undefined;
      let warnings: string[] = [];
      for (const client of clients.filter((c) => c.family === family)) {
        const label = `NestJS ${variant.nest} ${app} + ${client.id}`;
        log(`${label}: npm install`);
        const install = installed
          ? await npmInstall(dir, [client.spec])
          : await npmInstall(dir, [tarball, ...nest, client.spec, ...TOOLCHAIN]);
        warnings = [...new Set([...warnings, ...install.warnings])];
        const base = {
          nest: versionIn(dir, '@nestjs/core') ?? variant.nest,
          app,
          client: `${client.name} ${versionIn(dir, client.pkg) ?? client.spec}`,
          passedAs: client.passedAs,
        };
        if (install.ran.code !== 0) {
          rows.push({
            ...base,
            pass: false,
            reason: `install: ${failure(install.ran)}`,
            notes: [],
            installMs: install.ran.ms,
          });
          continue;
        }
        installed = client.id;
        const row = await check(dir, urls, [], { ...base, installMs: install.ran.ms, notes: warnings });
        log(`${label}: ${row.pass ? 'pass' : `FAIL — ${row.reason}`}`);
        rows.push(row);
        if (diagnose && !row.pass && row.reason.startsWith('tsc:')) {
          // Does the app run when its tsc skips the libraries' d.ts (the Nest CLI's default)?
          log(`diagnostic: ${label}, skipLibCheck on`);
          const skipped = await check(
            dir,
            urls,
            [],
            { ...base, app: `${app}, \`skipLibCheck: true\``, notes: [], expected: 'pass' },
            { skipLibCheck: true },
          );
          log(`diagnostic: ${label}, skipLibCheck on: ${skipped.pass ? 'pass' : `FAIL — ${skipped.reason}`}`);
          diagnostics.push(skipped);
        }
      }
      const last = rows[rows.length - 1];
      // Before the ESM diagnostics, which install a prototype build over the library.
      if (installed && last?.pass && tools) {
        for (const row of await checkToolchains(dir, urls, tools, toolchains, last)) {
          log(`${row.app} + ${row.client}: ${row.pass ? 'pass' : `FAIL — ${row.reason}`}`);
          rows.push(row);
        }
      }
      if (diagnose && variant.id === 'nest12-esm' && family === 'ioredis' && installed) {
        diagnostics.push(...(await diagnoseEsm(dir, urls, app, work)));
      }
    }
  }

  const env: Environment = {
    date: new Date().toISOString(),
    node: process.version,
    npm: (await run('npm', ['--version'], { cwd: REPO, timeoutMs: 30_000 })).stdout.trim(),
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    redis,
    library: `nestjs-redlock ${filename.replace(/^nestjs-redlock-|\.tgz$/g, '')}`,
    buildMs: build.ms,
    totalMs: Date.now() - t0,
  };
  // Temp paths change every run: the results call them `<tmp>`.
  const scrub = (text: string) => text.split(work).join('<tmp>');
  fs.writeFileSync(RESULTS, scrub(markdown(env, rows, diagnostics)));
  process.stdout.write(`\n${scrub(textTable(rows))}\n`);
  if (diagnostics.length > 0) {
    process.stdout.write(`\nDiagnostics (not counted):\n${scrub(textTable(diagnostics))}\n`);
  }
  const failed = rows.filter((row) => !row.pass).length;
  process.stdout.write(
    `\n${rows.length - failed} passed, ${failed} failed in ${((Date.now() - t0) / 1000).toFixed(1)} s; wrote ${path.relative(REPO, RESULTS)}\n`,
  );
  return failed > 0 || rows.length === 0 ? 1 : 0;
}

/** How a row builds and runs its app: defaults are the app's own tsc (skipLibCheck off), then this Node. */
interface How {
  readonly skipLibCheck?: boolean;
  /** Another TypeScript's tsc (TypeScript 7's native one). */
  readonly tsc?: string;
  /** Run the app's current dist/ as it is (compiled by the row before). */
  readonly precompiled?: boolean;
  /** Another runtime (Bun, Deno), and what the app must report as its runtime (`bun `, `deno `). */
  readonly runtime?: Runtime;
  readonly runtimeIs?: string;
  /** What the row checks beyond the app's own checks: put before the reason. */
  readonly says?: string;
}

/** Compiles the app in `dir` and runs it; one table row. */
async function check(
  dir: string,
  urls: readonly string[],
  nodeArgs: readonly string[],
  base: Pick<Row, 'nest' | 'app' | 'client' | 'passedAs' | 'notes' | 'installMs' | 'expected'>,
  how: How = {},
): Promise<Row> {
  await nodes?.flushAll();
  const notes = [...base.notes];
  const says = how.says ? `${how.says}: ` : '';
  if (how.precompiled) {
    const app = await runApp(dir, urls, nodeArgs, how.runtime);
    return verdictRow(app, base, notes, says, how.runtimeIs);
  }
  const compiled = await compileApp(dir, how.skipLibCheck, how.tsc);
  if (compiled.others.length > 0) notes.push(`tsc (other packages' d.ts): ${compiled.others[0]}`);
  if (compiled.ours.length > 0 || !fs.existsSync(path.join(dir, 'dist', 'main.js'))) {
    const reason = compiled.ours[0] ?? failure(compiled.ran);
    return {
      ...base,
      notes,
      pass: false,
      reason: `${says}tsc: ${reason}`,
      detail: compiled.ours.join('\n'),
      tscMs: compiled.ran.ms,
    };
  }
  const app = await runApp(dir, urls, nodeArgs, how.runtime);
  return { ...verdictRow(app, base, notes, says, how.runtimeIs), tscMs: compiled.ran.ms };
}

/** A row from the app's run; fails when the app says another runtime than `runtimeIs` ran it. */
function verdictRow(
  app: AppRun,
  base: Pick<Row, 'nest' | 'app' | 'client' | 'passedAs' | 'notes' | 'installMs' | 'expected'>,
  notes: readonly string[],
  says: string,
  runtimeIs: string | undefined,
): Row {
  const verdict = explain(app);
  const runtime = app.result?.runtime ?? '?';
  const wrongRuntime = runtimeIs !== undefined && app.result && !runtime.startsWith(runtimeIs);
  return {
    ...base,
    pass: verdict.pass && !wrongRuntime,
    reason: wrongRuntime
      ? `${says}the app reports runtime ${runtime}, not ${runtimeIs.trim()}`
      : `${says}${verdict.reason}`,
    notes: [...notes, ...verdict.notes],
    detail: verdict.detail,
    runMs: app.ran.ms,
  };
}

/**
 * The rows of the other toolchains for one app directory, whose last row (`last`) passed: the app's own tsc
 * output run by Bun and by Deno, then the app compiled by TypeScript 7's tsc and run on Node.
 */
async function checkToolchains(
  dir: string,
  urls: readonly string[],
  tools: Tools,
  wanted: readonly string[],
  last: Row,
): Promise<Row[]> {
  const base = { nest: last.nest, client: last.client, passedAs: last.passedAs, notes: [] };
  const tsc = `tsc ${versionIn(dir, 'typescript') ?? '?'}`;
  const missing = (what: string) => `install: ${what} did not install or start — ${failure(tools.ran)}`;
  const rows: Row[] = [];
  for (const [id, label] of [
    ['bun', 'Bun'],
    ['deno', 'Deno'],
  ] as const) {
    if (!wanted.includes(id)) continue;
    const runtime = tools[id];
    if (!runtime) {
      rows.push({ ...base, app: `${last.app}, ${label}`, pass: false, reason: missing(id) });
      continue;
    }
    const command = [id, ...runtime.args, 'dist/main.js'].join(' ');
    rows.push(
      await check(
        dir,
        urls,
        [],
        { ...base, app: `${last.app}, run by ${label} ${runtime.version}` },
        {
          precompiled: true,
          runtime,
          runtimeIs: `${id} `,
          says: `the app's ${tsc} output run by \`${command}\``,
        },
      ),
    );
  }
  if (wanted.includes('ts7')) {
    if (!tools.tsc7) {
      rows.push({ ...base, app: `${last.app}, TypeScript 7`, pass: false, reason: missing('typescript@7') });
    } else {
      const says =
        `compiled by TypeScript ${tools.tsc7.version}'s native tsc (\`typescript@7\`): app and the library's ` +
        'd.ts type-checked (skipLibCheck off), emitted, run on Node';
      rows.push(
        await check(
          dir,
          urls,
          [],
          { ...base, app: `${last.app}, tsc ${tools.tsc7.version}` },
          { tsc: tools.tsc7.path, says },
        ),
      );
    }
  }
  return rows;
}

/**
 * Why NestJS 12 ESM works at all with a CommonJS library: Node's require(esm). Runs the app once more with
 * it switched off (published build: expected to fail), then with a prototype ESM build (expected to pass).
 */
async function diagnoseEsm(dir: string, urls: readonly string[], app: string, work: string): Promise<Row[]> {
  const nest = versionIn(dir, '@nestjs/core') ?? '12';
  const client = `ioredis ${versionIn(dir, 'ioredis') ?? '?'}`;
  const passedAs = 'URLs';
  const rows: Row[] = [];
  log('diagnostic: published build, require(esm) off');
  rows.push(
    await check(dir, urls, NO_REQUIRE_ESM, {
      nest,
      app: `${app}, \`${NO_REQUIRE_ESM[0]}\`, published CJS build`,
      client,
      passedAs,
      notes: [],
      expected: 'fail',
    }),
  );
  log('diagnostic: prototype ESM build, require(esm) off');
  const label = `${app}, \`${NO_REQUIRE_ESM[0]}\`, prototype ESM build`;
  const proto = await packEsmPrototype(REPO, path.join(work, 'esm-prototype'), work);
  if (!proto.tarball) {
    rows.push({
      nest,
      app: label,
      client,
      passedAs,
      pass: false,
      reason: `prototype: ${proto.error}`,
      notes: [],
      expected: 'pass',
    });
    return rows;
  }
  const install = await npmInstall(dir, [proto.tarball]);
  if (install.ran.code !== 0) {
    rows.push({
      nest,
      app: label,
      client,
      passedAs,
      pass: false,
      reason: `install: ${failure(install.ran)}`,
      notes: [],
      expected: 'pass',
    });
    return rows;
  }
  const notes = [
    `${proto.rewritten} relative specifiers rewritten to './x.js' / './x/index.js'; ` +
      `${proto.requires} modules given a createRequire(import.meta.url) require`,
  ];
  rows.push(
    await check(dir, urls, NO_REQUIRE_ESM, {
      nest,
      app: label,
      client,
      passedAs,
      notes,
      installMs: install.ran.ms,
      expected: 'pass',
    }),
  );
  return rows;
}

function versionIn(dir: string, pkg: string): string | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

async function redisVersion(redisNodes: RedisNodes): Promise<string> {
  const client = redisNodes.nodes[0].redis();
  try {
    const info = await client.info('server');
    return `redis ${/redis_version:(\S+)/.exec(info)?.[1] ?? '?'} (${redisNodes.source})`;
  } finally {
    client.disconnect();
  }
}

function abort(message: string): number {
  log(message);
  fs.writeFileSync(
    RESULTS,
    `# Compatibility results\n\nRun on ${new Date().toISOString()} aborted: ${message}\n`,
  );
  return 1;
}

async function cleanup(): Promise<void> {
  killRunning();
  const started = nodes;
  nodes = undefined;
  await started?.stop();
  if (tmp && process.env.COMPAT_KEEP !== '1') fs.rmSync(tmp, { recursive: true, force: true });
  else if (tmp) log(`kept ${tmp}`);
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}

main()
  .catch((error: unknown) => {
    log(`crashed: ${(error as Error)?.stack ?? String(error)}`);
    return 1;
  })
  .then(async (code) => {
    await cleanup();
    process.exitCode = code;
  });
