import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RedisNodes, startRedisNodes } from '../support';
import { NEST_CLI_COMPILER_OPTIONS } from '../docs/snippets';
import { internalDeclarations, leakedInternals } from './internal-declarations';
import { REPO, buildLibrary, installInto, packInto, tarballFiles, typeCheck } from './packed-package';

/**
 * What ships, tested as a user gets it: `npm pack` (which builds through `prepack`), the tarball installed
 * into a throwaway app in the OS temp dir (its other dependencies linked to the repository's node_modules:
 * no network), then its file list, its declarations as a user's TypeScript sees them, and a real lock through
 * the packed copy — `new Redlock(urls)` and a Nest app with `@Locked` — against 3 real nodes.
 */
const DEPENDENCIES = [
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/schedule',
  'ioredis',
  'reflect-metadata',
  'rxjs',
  'typescript',
  '@types/node',
];

/** A CommonJS app as the Nest CLI sets one up (decorators, metadata, strict), checking the library's d.ts. */
const TSCONFIG = {
  compilerOptions: {
    ...NEST_CLI_COMPILER_OPTIONS,
    noEmit: false,
    skipLibCheck: false,
    rootDir: 'src',
    outDir: 'dist',
  },
  include: ['src'],
};

/** Types a user relies on, and internals they must not see (each `@ts-expect-error` must find an error). */
const TYPES_TS = `
import {
  AcquireAbortedError, DEFAULT_MODULE_OPTIONS, DEFAULT_OPTIONS, InvalidArgumentError, InvalidLockKeyError,
  Lock, LockBusyError, LockBusyFilter, LockLostError, Locked, QuorumUnavailableError, Redlock,
  RedlockClosedError, RedlockError, RedlockHealthIndicator, RedlockModule, RedlockService, UnknownOptionError,
} from 'nestjs-redlock';
import type {
  AcquireOptions, LockedOptions, LockNode, NodeSpec, RedlockEventMap, RedlockModuleOptions, RedlockOptions,
  ReleaseResult, UsingOptions,
} from 'nestjs-redlock';
// @ts-expect-error internal: not exported
import { LockedSections } from 'nestjs-redlock';
// @ts-expect-error internal: not exported
import { resolveOptions } from 'nestjs-redlock';

// \`await using\`: typed by the published d.ts with @types/node alone (its AsyncDisposable), no lib setting.
export async function disposable(redlock: Redlock): Promise<string> {
  await using lock = await redlock.acquire('x');
  return lock.value;
}

export async function typed(redlock: Redlock, service: RedlockService): Promise<number> {
  const options: RedlockOptions = { ttl: DEFAULT_OPTIONS.ttl, fencing: true };
  const perCall: AcquireOptions = { wait: 0 };
  const using: UsingOptions = { autoExtend: false };
  const lock: Lock = await redlock.acquire(['a', 'b'], perCall);
  const token: number | undefined = lock.fencingToken;
  const result: ReleaseResult = await lock.release();
  const value: string = await service.using('c', using, async (held: Lock) => held.value);
  redlock.on('acquired', (event: RedlockEventMap['acquired']) => event.attempts);
  // @ts-expect-error internal
  lock.markReleased();
  // @ts-expect-error internal
  lock.claim;
  // @ts-expect-error internal
  redlock.lockResources;
  // @ts-expect-error internal
  redlock.runUnderLock;
  // @ts-expect-error internal: the constructor with test hooks
  new Redlock([], {}, { unsafeSkipValidityCheck: true });
  const nodes: NodeSpec[] = ['redis://127.0.0.1:6379'];
  const moduleOptions: RedlockModuleOptions = {
    nodes,
    ttl: 5_000,
    fencing: true,
    shutdownTimeout: DEFAULT_MODULE_OPTIONS.shutdownTimeout,
  };
  const locked: LockedOptions = { onBusy: 'skip' };
  const classes = [
    AcquireAbortedError, InvalidArgumentError, InvalidLockKeyError, LockBusyError, LockLostError,
    QuorumUnavailableError, RedlockClosedError, RedlockError, UnknownOptionError, LockBusyFilter,
    RedlockHealthIndicator, RedlockModule,
  ];
  const node: LockNode | undefined = undefined;
  void [token, value, moduleOptions, locked, classes, node, Locked];
  return result.releasedOn + options.ttl!;
}
`;

/** A real lock through the packed copy: standalone, then a Nest app with @Locked; one result line. */
const MAIN_TS = `
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { Locked, Redlock, RedlockModule, RedlockService } from 'nestjs-redlock';

const urls = (process.env.PACKED_REDIS_URLS ?? '').split(',');

async function valuesOf(key: string): Promise<(string | null)[]> {
  return Promise.all(
    urls.map(async (url) => {
      const client = new Redis(url);
      try {
        return await client.get(key);
      } finally {
        await client.quit();
      }
    }),
  );
}

@Injectable()
class Jobs {
  constructor(readonly redlock: RedlockService) {}

  @Locked('packed:job:<0>')
  async run(id: string): Promise<{ resources: readonly string[]; owner: string; values: (string | null)[] }> {
    const lock = this.redlock.current()!;
    const values = await valuesOf('redlock:{packed:job:' + id + '}');
    return { resources: lock.resources, owner: lock.value, values };
  }
}

@Module({
  imports: [RedlockModule.forRoot(urls, { restartGuard: false, logger: false })],
  providers: [Jobs],
})
class AppModule {}

async function main(): Promise<void> {
  const result: Record<string, unknown> = {
    resolved: require.resolve('nestjs-redlock'),
    exports: Object.keys(require('nestjs-redlock')).sort(),
  };
  const redlock = new Redlock(urls, { restartGuard: false, logger: false });
  await redlock.connect();
  const lock = await redlock.acquire('packed:standalone');
  result.standalone = { owner: lock.value, values: await valuesOf('redlock:{packed:standalone}') };
  result.releasedOn = (await (await lock.release()).settled).releasedOn;
  result.standaloneAfter = await valuesOf('redlock:{packed:standalone}');
  await redlock.quit();

  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  result.locked = await app.get(Jobs).run('7');
  result.lockedAfter = await valuesOf('redlock:{packed:job:7}');
  await app.close();
  console.log('PACKED_RESULT ' + JSON.stringify(result));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
`;

/** The app's own dependencies when it uses node-redis only: no ioredis anywhere it can resolve. */
const NODE_REDIS_DEPENDENCIES = [
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/schedule',
  'redis',
  'reflect-metadata',
  'rxjs',
  '@types/node',
];

/**
 * The same app's TypeScript, type-checked against the installed declarations with skipLibCheck off (the
 * declarations must not need ioredis, and NodeSpec must still reject what is no node: not `any`).
 */
const NODE_REDIS_TYPES_TS = `
import { Injectable, Module } from '@nestjs/common';
import { createClient } from 'redis';
import { Locked, NodeSpec, Redlock, RedlockModule } from 'nestjs-redlock';

const clients = ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6380'].map((url) => createClient({ url }));
const nodes: NodeSpec[] = [...clients, 'redis://127.0.0.1:6381'];

@Injectable()
export class Jobs {
  @Locked('job:<0>')
  async run(id: string): Promise<string> {
    return id;
  }
}

@Module({ imports: [RedlockModule.forRoot(clients)], providers: [Jobs] })
export class AppModule {}

export const standalone = new Redlock(nodes, { client: 'node-redis' });
// @ts-expect-error a number is no node
export const refused = new Redlock([42]);
// @ts-expect-error no such client kind
export const unknownKind = new Redlock(nodes, { client: 'glide' });
`;

/** An app whose only Redis client is node-redis: @Locked, a guarded @Cron tick on two instances, no ioredis. */
const NODE_REDIS_MAIN_JS = `
require('reflect-metadata');
const { Injectable, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { Cron, ScheduleModule } = require('@nestjs/schedule');
const { createClient } = require('redis');
const { Locked, Redlock, RedlockModule } = require('nestjs-redlock');

const urls = (process.env.PACKED_REDIS_URLS ?? '').split(',');
const ticks = [];

function decorate(target, name, decorators) {
  const descriptor = Object.getOwnPropertyDescriptor(target.prototype, name);
  const result = decorators.reduceRight((d, decorator) => decorator(target.prototype, name, d) ?? d, descriptor);
  Object.defineProperty(target.prototype, name, result);
}

class Jobs {
  async pay(id) {
    return 'paid ' + id;
  }
  async tick() {
    ticks.push(Math.floor(Date.now() / 1000));
  }
}
decorate(Jobs, 'pay', [Locked('order:<0>')]);
decorate(Jobs, 'tick', [Cron('* * * * * *'), Locked('report:tick')]);
Injectable()(Jobs);

async function app(clients) {
  class AppModule {}
  Module({
    imports: [ScheduleModule.forRoot(), RedlockModule.forRoot(clients, { restartGuard: false, logger: false })],
    providers: [Jobs],
  })(AppModule);
  const instance = await NestFactory.createApplicationContext(AppModule, { logger: false });
  await instance.init();
  return instance;
}

async function main() {
  const result = { redis: require('redis/package.json').version.split('.')[0] };
  try {
    require.resolve('ioredis');
    result.ioredis = 'resolvable';
  } catch {
    result.ioredis = 'absent';
  }
  const clientsOf = () =>
    Promise.all(
      urls.map(async (url) => {
        const client = createClient({ url });
        client.on('error', () => undefined);
        await client.connect();
        return client;
      }),
    );
  const sets = [await clientsOf(), await clientsOf()];
  const apps = [await app(sets[0]), await app(sets[1])];
  result.paid = await apps[0].get(Jobs).pay('7');
  // redis:// strings with client: 'node-redis' (the library creates the clients; no ioredis installed).
  const fromUrls = new Redlock(urls, { client: 'node-redis', restartGuard: false, logger: false });
  await fromUrls.connect(2000);
  const urlLock = await fromUrls.acquire('url:1');
  result.fromUrls = urlLock.resources[0];
  await urlLock.release();
  await fromUrls.quit();
  await new Promise((resolve) => setTimeout(resolve, 3500));
  await Promise.all(apps.map((a) => a.close()));
  const perSecond = {};
  for (const second of ticks) perSecond[second] = (perSecond[second] ?? 0) + 1;
  result.ticks = Object.values(perSecond);
  for (const clients of sets) for (const client of clients) client.destroy();
  console.log('PACKED_RESULT ' + JSON.stringify(result));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
`;

/** The app's sources and the installed package (other packages' d.ts are not ours). */
const isOurs = (file: string) => file.startsWith('src/') || file.includes('node_modules/nestjs-redlock/');
/** tsc error lines about our files. */
const ourErrors = (output: string) =>
  output
    .split('\n')
    .filter((line) => /error TS\d+/.test(line))
    .filter((line) => isOurs(line));
/** The app type-checked as tsc would, our files' diagnostics only (their d.ts included: skipLibCheck off). */
const tsc = (dir: string, extraArgs: readonly string[] = []) => typeCheck(dir, extraArgs, isOurs);

describe('the packed package (npm pack, installed into a throwaway app)', () => {
  let work: string;
  let app: string;
  let tarball: string;
  let installed: string;
  let nodes: RedisNodes | undefined;

  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'nestjs-redlock-packed-'));
    app = path.join(work, 'app');
    tarball = packInto(work);
    installed = installInto(app, tarball, DEPENDENCIES);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'packed-app', private: true }));
    fs.writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
    fs.mkdirSync(path.join(app, 'src'));
    fs.writeFileSync(path.join(app, 'src', 'types.ts'), TYPES_TS);
    fs.writeFileSync(path.join(app, 'src', 'main.ts'), MAIN_TS);
  }, 120_000);
  afterAll(async () => {
    await nodes?.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('ships dist, README.md, LICENSE, CHANGELOG.md, package.json and core/package.json only — no tests or maps', () => {
    const files = tarballFiles(tarball);
    const outside = files.filter(
      (file) =>
        !['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'core/package.json'].includes(file) &&
        !file.startsWith('dist/'),
    );
    expect(outside).toEqual([]);
    expect(files).toEqual(
      expect.arrayContaining(['LICENSE', 'CHANGELOG.md', 'README.md', 'dist/index.js', 'dist/index.d.ts']),
    );
    const unexpected = files.filter((file) => file.startsWith('dist/') && !/\.(js|d\.ts)$/.test(file));
    expect(unexpected).toEqual([]);
    expect(
      files.filter((file) =>
        /\.(spec|test)\.|(^|\/)(test|tests|__tests__|support)\/|\.map$|tsbuildinfo/.test(file),
      ),
    ).toEqual([]);

    const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));
    expect(manifest.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
    expect(manifest.exports['./core']).toEqual({
      types: './dist/standalone.d.ts',
      default: './dist/standalone.js',
    });
    expect(manifest.scripts.prepack).toBe('npm run build');
    // Every Redis client is optional: an app needs the one it uses (ioredis for URLs the library connects).
    expect(manifest.peerDependenciesMeta).toEqual({
      '@nestjs/schedule': { optional: true },
      '@opentelemetry/api': { optional: true },
      ioredis: { optional: true },
      iovalkey: { optional: true },
      redis: { optional: true },
    });
    expect(manifest.dependencies).toBeUndefined();
    // The bin (`npx nestjs-redlock dev-redis`) ships, and runs from the installed copy.
    expect(manifest.bin).toEqual({ 'nestjs-redlock': 'dist/cli/index.js' });
    const usage = execFileSync(
      process.execPath,
      [path.join(installed, 'dist', 'cli', 'index.js'), '--help'],
      {
        encoding: 'utf8',
      },
    );
    expect(usage).toMatch(/^Usage: nestjs-redlock dev-redis/);
  });

  it('its declarations carry no internals (stripInternal)', () => {
    const declarations = tarballFiles(tarball).filter((file) => file.endsWith('.d.ts'));
    const leaking = declarations.filter((file) =>
      /\b(lockResources|runUnderLock|markReleased|markLost|setDeadline|settingsFor)\b/.test(
        fs.readFileSync(path.join(installed, file), 'utf8'),
      ),
    );
    expect(leaking).toEqual([]);
    // Every declaration marked @internal in lib/ (test hooks such as unsafeSkipValidityCheck included).
    expect(internalDeclarations().size).toBeGreaterThan(2);
    expect(leakedInternals(path.join(installed, 'dist'))).toEqual([]);
  });

  it('negative control: declarations built without stripInternal show those internals to the check', () => {
    const out = path.join(work, 'unstripped');
    // Declarations only, unchecked (--noCheck: the same files, without a type-check the build already did).
    buildLibrary(out, true, ['--stripInternal', 'false', '--noCheck']);
    expect(leakedInternals(out)).toEqual(
      expect.arrayContaining([
        'core/acquire/plan.ts: unsafeSkipValidityCheck',
        'core/instance.ts: RedlockInternals',
      ]),
    );
  }, 120_000);

  it("type-checks a user's CommonJS app against the installed d.ts (node10 and nodenext resolution)", () => {
    const classic = tsc(app);
    expect(ourErrors(classic.output)).toEqual([]);
    expect(fs.existsSync(path.join(app, 'dist', 'main.js'))).toBe(true);
    // Through package.json "exports" (types condition), as a nodenext project resolves it.
    const nodenext = tsc(app, ['--module', 'nodenext', '--moduleResolution', 'nodenext', '--noEmit']);
    expect(ourErrors(nodenext.output)).toEqual([]);
  }, 120_000);

  it('a type error in the app is reported (negative control of the filter)', () => {
    const broken = path.join(app, 'broken');
    fs.mkdirSync(path.join(broken, 'src'), { recursive: true });
    fs.writeFileSync(
      path.join(broken, 'src', 'index.ts'),
      "import { Redlock } from 'nestjs-redlock';\nnew Redlock(['redis://x']).acquire(42);\n",
    );
    fs.writeFileSync(
      path.join(broken, 'tsconfig.json'),
      JSON.stringify({
        ...TSCONFIG,
        compilerOptions: { ...TSCONFIG.compilerOptions, skipLibCheck: true, noEmit: true },
      }),
    );
    fs.symlinkSync(path.join(app, 'node_modules'), path.join(broken, 'node_modules'), 'dir');
    const result = tsc(broken);
    expect(ourErrors(result.output)).toEqual([
      expect.stringMatching(/^src\/index\.ts\(2,\d+\): error TS2345/),
    ]);
  }, 60_000);

  it('locks through the packed copy on 3 real nodes: new Redlock(urls), a Nest app with @Locked', async () => {
    nodes = await startRedisNodes(3);
    const output = execFileSync(process.execPath, ['dist/main.js'], {
      cwd: app,
      encoding: 'utf8',
      env: { ...process.env, PACKED_REDIS_URLS: nodes.urls.join(','), NODE_OPTIONS: '' },
      timeout: 30_000,
    });
    const line = output.split('\n').find((l) => l.startsWith('PACKED_RESULT '));
    expect(line).toBeDefined();
    const result = JSON.parse(line!.slice('PACKED_RESULT '.length));

    expect(fs.realpathSync(result.resolved)).toBe(fs.realpathSync(path.join(installed, 'dist', 'index.js')));
    // Same runtime exports as the sources' entry point.
    expect(result.exports).toEqual(Object.keys(require('../../lib')).sort());
    expect(result.standalone.values).toEqual(Array(3).fill(result.standalone.owner));
    expect(result.releasedOn).toBe(3);
    expect(result.standaloneAfter).toEqual([null, null, null]);
    expect(result.locked.resources).toEqual(['packed:job:7']);
    expect(result.locked.values).toEqual(Array(3).fill(result.locked.owner));
    expect(result.lockedAfter).toEqual([null, null, null]);
  }, 60_000);

  it.each([
    ['redis', 'redis 5'],
    ['redis=redis6', 'redis 6'],
  ])(
    'locks in an app that has only node-redis installed (%s, no ioredis): @Locked, URLs, a @Cron tick once across two instances',
    (redis, version) => {
      const redisOnly = path.join(work, `node-redis-app-${version.replace(' ', '')}`);
      const dependencies = NODE_REDIS_DEPENDENCIES.map((name) => (name === 'redis' ? redis : name));
      installInto(redisOnly, tarball, dependencies);
      fs.writeFileSync(
        path.join(redisOnly, 'package.json'),
        JSON.stringify({ name: 'node-redis-app', private: true }),
      );
      fs.writeFileSync(path.join(redisOnly, 'main.js'), NODE_REDIS_MAIN_JS);
      fs.writeFileSync(path.join(redisOnly, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
      fs.mkdirSync(path.join(redisOnly, 'src'));
      fs.writeFileSync(path.join(redisOnly, 'src', 'types.ts'), NODE_REDIS_TYPES_TS);
      const checked = typeCheck(redisOnly, ['--noEmit'], isOurs);
      expect(checked.output).toBe('');
      const urls = nodes!.urls.join(',');
      const output = execFileSync(process.execPath, ['main.js'], {
        cwd: redisOnly,
        encoding: 'utf8',
        env: { ...process.env, PACKED_REDIS_URLS: urls, NODE_OPTIONS: '', NODE_PATH: '' },
        timeout: 30_000,
      });
      const line = output.split('\n').find((l) => l.startsWith('PACKED_RESULT '));
      expect(line).toBeDefined();
      const result = JSON.parse(line!.slice('PACKED_RESULT '.length));
      expect(result.redis).toBe(version.split(' ')[1]);
      expect(result.ioredis).toBe('absent');
      expect(result.paid).toBe('paid 7');
      expect(result.fromUrls).toBe('url:1');
      // About three ticks in 3.5 s, each run by one of the two instances only.
      expect(result.ticks.length).toBeGreaterThanOrEqual(2);
      expect(Math.max(...result.ticks)).toBe(1);
    },
    60_000,
  );
  it('npm installs it beside redis 6 with peer checks on (no --legacy-peer-deps), without ioredis, and it locks', () => {
    const real = path.join(work, 'npm-installed-app');
    fs.mkdirSync(real);
    fs.writeFileSync(
      path.join(real, 'package.json'),
      JSON.stringify({ name: 'npm-installed-app', private: true }),
    );
    // The versions this repository installed (so npm's cache serves them); npm 7+ refuses unmet peers (ERESOLVE).
    const version = (name: string) =>
      (
        JSON.parse(fs.readFileSync(path.join(REPO, 'node_modules', name, 'package.json'), 'utf8')) as {
          version: string;
        }
      ).version;
    const packages = ['@nestjs/common', '@nestjs/core', '@nestjs/schedule', 'reflect-metadata', 'rxjs'];
    execFileSync(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--strict-peer-deps',
        tarball,
        `redis@${version('redis6')}`,
        ...packages.map((name) => `${name}@${version(name)}`),
      ],
      {
        cwd: real,
        stdio: 'pipe',
        timeout: 180_000,
        env: { ...process.env, npm_config_legacy_peer_deps: 'false' },
      },
    );
    expect(fs.existsSync(path.join(real, 'node_modules', 'ioredis'))).toBe(false);
    fs.writeFileSync(path.join(real, 'main.js'), NODE_REDIS_MAIN_JS);
    const output = execFileSync(process.execPath, ['main.js'], {
      cwd: real,
      encoding: 'utf8',
      env: { ...process.env, PACKED_REDIS_URLS: nodes!.urls.join(','), NODE_OPTIONS: '', NODE_PATH: '' },
      timeout: 30_000,
    });
    const line = output.split('\n').find((l) => l.startsWith('PACKED_RESULT '));
    expect(line).toBeDefined();
    const result = JSON.parse(line!.slice('PACKED_RESULT '.length));
    expect(result).toMatchObject({ redis: '6', ioredis: 'absent', paid: 'paid 7', fromUrls: 'url:1' });
    expect(Math.max(...result.ticks)).toBe(1);
  }, 240_000);

  it('without Nest: nestjs-redlock/core locks in a package with no @nestjs installed (node10, node16, bundler)', () => {
    const plain = path.join(work, 'no-nest-app');
    installInto(plain, tarball, ['ioredis', '@types/node']);
    fs.writeFileSync(
      path.join(plain, 'package.json'),
      JSON.stringify({ name: 'no-nest-app', private: true }),
    );
    fs.writeFileSync(
      path.join(plain, 'main.js'),
      `const { Redlock, LockBusyError } = require('nestjs-redlock/core');
const urls = process.env.PACKED_REDIS_URLS.split(',');
let nest = 'absent';
try { require.resolve('@nestjs/common'); nest = 'resolvable'; } catch {}
(async () => {
  const redlock = new Redlock(urls, { restartGuard: false, logger: false });
  await redlock.connect(2000);
  const lock = await redlock.acquire('no-nest:1');
  const busy = await redlock.acquire('no-nest:1', { wait: 0 }).catch((e) => e instanceof LockBusyError);
  await lock.release();
  await redlock.quit();
  const loaded = Object.keys(require.cache).some((file) => file.includes('@nestjs'));
  console.log('PACKED_RESULT ' + JSON.stringify({ nest, loaded, busy, resource: lock.resources[0] }));
})().catch((error) => { console.error(error); process.exit(1); });
`,
    );
    fs.mkdirSync(path.join(plain, 'src'));
    fs.writeFileSync(
      path.join(plain, 'src', 'main.ts'),
      "import { Redlock, type Lock } from 'nestjs-redlock/core';\n" +
        'export async function once(redlock: Redlock): Promise<string> {\n' +
        "  const lock: Lock = await redlock.acquire('x');\n  await lock.release();\n  return lock.resources[0];\n}\n",
    );
    for (const [module, moduleResolution] of [
      ['commonjs', 'node10'],
      ['node16', 'node16'],
      ['esnext', 'bundler'],
    ]) {
      fs.writeFileSync(
        path.join(plain, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            module,
            moduleResolution,
            target: 'es2022',
            strict: true,
            skipLibCheck: false,
            noEmit: true,
            types: ['node'],
          },
          include: ['src'],
        }),
      );
      const checked = typeCheck(
        plain,
        [],
        (file) => file.startsWith('src/') || file.includes('nestjs-redlock/'),
      );
      expect({ moduleResolution, output: checked.output }).toEqual({ moduleResolution, output: '' });
    }
    const output = execFileSync(process.execPath, ['main.js'], {
      cwd: plain,
      encoding: 'utf8',
      env: { ...process.env, PACKED_REDIS_URLS: nodes!.urls.join(','), NODE_OPTIONS: '', NODE_PATH: '' },
      timeout: 30_000,
    });
    const line = output.split('\n').find((l) => l.startsWith('PACKED_RESULT '));
    expect(JSON.parse(line!.slice('PACKED_RESULT '.length))).toEqual({
      nest: 'absent',
      loaded: false,
      busy: true,
      resource: 'no-nest:1',
    });
  }, 60_000);
});
