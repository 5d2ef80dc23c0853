/**
 * The compatibility app: run by compat/run.ts in a throwaway directory, with nestjs-redlock installed from
 * its packed tarball. Prints one line `COMPAT_RESULT <json>` and exits 0 when every check passed.
 */
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';

const checks: Record<string, boolean> = {};
const details: Record<string, unknown> = {};

function versionOf(pkg: string): string {
  try {
    const file = path.join(process.cwd(), 'node_modules', pkg, 'package.json');
    return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    return 'missing';
  }
}

/** Whether the library could load ioredis (`require('ioredis')` from its own directory). */
function ioredisResolvable(): boolean {
  try {
    createRequire(path.join(process.cwd(), 'node_modules', 'nestjs-redlock', 'package.json')).resolve(
      'ioredis',
    );
    return true;
  } catch {
    return false;
  }
}

function report(ok: boolean, stage: string, error?: unknown): void {
  const failure =
    error === undefined
      ? undefined
      : {
          name: (error as Error)?.name,
          code: (error as { code?: string })?.code,
          message: String((error as Error)?.message ?? error),
          stack: String((error as Error)?.stack ?? '')
            .split('\n')
            .slice(0, 8)
            .join('\n'),
        };
  const result = {
    ok,
    stage,
    node: process.version,
    // Bun and Deno report a Node version too: this says which runtime really ran the app.
    runtime: process.versions.bun
      ? `bun ${process.versions.bun}`
      : process.versions.deno
        ? `deno ${process.versions.deno}`
        : `node ${process.versions.node}`,
    format: typeof require === 'function' ? 'commonjs' : 'esm',
    versions: {
      '@nestjs/common': versionOf('@nestjs/common'),
      '@nestjs/core': versionOf('@nestjs/core'),
      ioredis: versionOf('ioredis'),
      redis: versionOf('redis'),
      iovalkey: versionOf('iovalkey'),
      'nestjs-redlock': versionOf('nestjs-redlock'),
    },
    checks,
    details,
    error: failure,
  };
  process.stdout.write(`COMPAT_RESULT ${JSON.stringify(result)}\n`);
}

async function main(): Promise<void> {
  let stage = 'load';
  let clients: typeof import('./clients.js') | undefined;
  try {
    // The nodes' client kind (src/clients.ts): an app passing node-redis or iovalkey clients has no ioredis.
    clients = await import('./clients.js');
    details.clients = {
      kind: clients.kind,
      passedAs: clients.passedAs,
      ioredisResolvable: ioredisResolvable(),
    };
    if (!clients.needsIoredis) checks.noIoredisInstalled = !ioredisResolvable();
    // Dynamic, so a failure to load the library (or Nest) is reported as a result, not a crash.
    const { AppModule, CompatService } = await import('./app.module.js');
    const { NestFactory } = await import('@nestjs/core');
    stage = 'bootstrap';
    const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
    try {
      const service = app.get(CompatService);
      stage = '@Locked';
      const single = await service.locked('single', 10);
      checks.lockedReturned = single.id === 'single';
      checks.currentInsideLocked = single.currentHeld;
      checks.lockedKeyOnQuorum = single.keyOnNodes >= Math.floor(3 / 2) + 1;
      checks.currentOutsideUndefined = service.redlock.current() === undefined;

      stage = '@Locked concurrent';
      const [a, b] = await Promise.all([service.locked('shared', 150), service.locked('shared', 150)]);
      const [first, second] = a.startedAt <= b.startedAt ? [a, b] : [b, a];
      checks.concurrentNoOverlap = service.maxActive === 1 && first.endedAt <= second.startedAt;
      details.concurrent = {
        maxActive: service.maxActive,
        first: [first.startedAt, first.endedAt],
        second: [second.startedAt, second.endedAt],
      };

      stage = 'using()';
      const used = await service.viaUsing();
      checks.usingReturned = used.value === 'using-result';
      checks.currentInsideUsing = used.sameAsCurrent;
      checks.usingFencingToken = typeof used.fencingToken === 'number' && used.fencingToken > 0;
      checks.usingKeyOnQuorum = used.keyOnNodes >= 2;
      details.using = used;
      details.single = single;
    } finally {
      stage = 'close';
      await app.close();
      // Clients the app passed in are left open by the library: the app closes them itself.
      stage = 'close clients';
      await clients.closeNodes();
    }
    if (clients.clientErrors.length > 0) details.clientErrors = clients.clientErrors.slice(0, 5);
    const ok = Object.values(checks).every(Boolean);
    report(ok, ok ? 'done' : 'checks');
    process.exitCode = ok ? 0 : 1;
  } catch (error) {
    report(false, stage, error);
    process.exitCode = 1;
    // Open clients would keep the process alive until the driver's timeout.
    await clients?.closeNodes().catch(() => undefined);
  }
}

void main();
