import * as fs from 'node:fs';
import * as path from 'node:path';
import { Ran, failure, run } from './proc';
import type { AppResult } from './report';

/** The template of the throwaway app: compat/app/{tsconfig.json,src/}, plus one of compat/app/clients/. */
const TEMPLATE = path.join(__dirname, 'app');
const INSTALL_TIMEOUT = 5 * 60_000;
const RESULT_PREFIX = 'COMPAT_RESULT ';

/** Which Redis client the app has and how it passes its nodes: compat/app/clients/<family>.ts. */
export type ClientFamily = 'ioredis' | 'redis' | 'iovalkey';

export interface AppVariant {
  readonly id: string;
  readonly nest: '11' | '12';
  readonly type: 'module' | 'commonjs';
}

/**
 * Writes the app (package.json with its module type, tsconfig, sources) into an empty directory; its
 * src/clients.ts is compat/app/clients/<family>.ts: how the app passes its nodes and reads them back.
 */
export function prepareApp(dir: string, variant: AppVariant, family: ClientFamily): void {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const pkg = { name: `compat-${variant.id}-${family}`, private: true, type: variant.type };
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  fs.copyFileSync(path.join(TEMPLATE, 'tsconfig.json'), path.join(dir, 'tsconfig.json'));
  fs.cpSync(path.join(TEMPLATE, 'src'), path.join(dir, 'src'), { recursive: true });
  fs.copyFileSync(path.join(TEMPLATE, 'clients', `${family}.ts`), path.join(dir, 'src', 'clients.ts'));
}

/** `npm install` in the app; returns the run and npm's engine warnings (`file-type@22.3.0 wants node >=22`). */
export async function npmInstall(
  dir: string,
  specs: readonly string[],
): Promise<{ ran: Ran; warnings: string[] }> {
  const ran = await run('npm', ['install', '--no-audit', '--no-fund', ...specs], {
    cwd: dir,
    timeoutMs: INSTALL_TIMEOUT,
  });
  const warnings: string[] = [];
  const re = /EBADENGINE\s+package: '([^']+)',\s*npm warn EBADENGINE\s+required: \{ node: '([^']+)' \}/g;
  for (const match of ran.stderr.matchAll(re)) {
    warnings.push(`npm EBADENGINE: ${match[1]} requires node ${match[2]}`);
  }
  return { ran, warnings };
}

/** The app's tsc errors, split into those that concern us (app sources, the library's d.ts) and the rest. */
interface Compiled {
  readonly ran: Ran;
  readonly ours: string[];
  readonly others: string[];
}

/**
 * Compiles the app with its own tsc (or `tsc`, another TypeScript's), with skipLibCheck off: the library's d.ts
 * are type-checked too (`skipLibCheck: true`, the Nest CLI's default, only for a diagnostic row).
 */
export async function compileApp(
  dir: string,
  skipLibCheck = false,
  tsc = path.join(dir, 'node_modules', '.bin', 'tsc'),
): Promise<Compiled> {
  fs.rmSync(path.join(dir, 'dist'), { recursive: true, force: true });
  const args = ['-p', 'tsconfig.json', '--skipLibCheck', String(skipLibCheck), '--pretty', 'false'];
  const ran = await run(tsc, args, {
    cwd: dir,
    timeoutMs: 180_000,
  });
  const errors = ran.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
  const ours = errors.filter(
    (line) => line.startsWith('src/') || line.includes('node_modules/nestjs-redlock/'),
  );
  const others = errors.filter((line) => !ours.includes(line));
  return { ran, ours, others };
}

export interface AppRun {
  readonly ran: Ran;
  readonly result?: AppResult;
}

/** What runs the compiled app: this Node (the default), or another runtime's command and its arguments. */
export interface Runtime {
  readonly command: string;
  readonly args: readonly string[];
}

/** Runs the compiled app against the nodes and reads its result line. */
export async function runApp(
  dir: string,
  urls: readonly string[],
  nodeArgs: readonly string[],
  runtime: Runtime = { command: process.execPath, args: [] },
): Promise<AppRun> {
  const ran = await run(runtime.command, [...runtime.args, ...nodeArgs, 'dist/main.js'], {
    cwd: dir,
    env: { COMPAT_REDIS_URLS: urls.join(','), NODE_OPTIONS: '' },
    timeoutMs: 60_000,
  });
  const line = ran.stdout.split('\n').find((l) => l.startsWith(RESULT_PREFIX));
  let result: AppResult | undefined;
  try {
    result = line ? (JSON.parse(line.slice(RESULT_PREFIX.length)) as AppResult) : undefined;
  } catch {
    result = undefined;
  }
  return { ran, result };
}

/** Why a run passed or failed, in one line, plus the full error for the details section. */
export function explain(app: AppRun): { pass: boolean; reason: string; detail?: string; notes: string[] } {
  const { ran, result } = app;
  const notes = stderrNotes(ran.stderr);
  if (!result) {
    return { pass: false, reason: `no result line; ${failure(ran, 4)}`, detail: ran.stderr.trim(), notes };
  }
  if (result.ok && ran.code === 0) {
    const single = result.details.single as { keyOnNodes: number } | undefined;
    const using = result.details.using as { keyOnNodes: number } | undefined;
    const overlap = result.details.concurrent as { maxActive: number } | undefined;
    const noIoredis = result.checks.noIoredisInstalled ? '; ioredis not resolvable from the library' : '';
    const errors = result.details.clientErrors as string[] | undefined;
    if (errors?.length) notes.push(`the app's node clients emitted 'error': ${errors[0]}`);
    return {
      pass: true,
      reason:
        `@Locked returned, current() held the lock, key on ${single?.keyOnNodes}/3 nodes; ` +
        `2 concurrent @Locked serialized (max active ${overlap?.maxActive}); ` +
        `using() returned, fencing token issued, key on ${using?.keyOnNodes}/3${noIoredis}`,
      notes,
    };
  }
  if (result.error) {
    const id = result.error.code ?? result.error.name ?? 'Error';
    const first = result.error.message.split('\n')[0];
    return {
      pass: false,
      reason: `${result.stage}: ${id}: ${first}`,
      detail: result.error.stack || result.error.message,
      notes,
    };
  }
  const failed = Object.entries(result.checks)
    .filter(([, ok]) => !ok)
    .map(([name]) => name);
  return {
    pass: false,
    reason: `checks failed: ${failed.join(', ') || `exit ${ran.code}`}`,
    detail: JSON.stringify(result.details, null, 2),
    notes,
  };
}

/** Warnings the app's process printed (an ExperimentalWarning about require(esm), say), deduplicated. */
function stderrNotes(stderr: string): string[] {
  const lines = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /Warning|warn/i.test(line) && !line.startsWith('at '));
  return [...new Set(lines)].slice(0, 3).map((line) => `stderr: ${line}`);
}
