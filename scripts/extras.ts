/**
 * The package folders of this repository that are not the library's: bench/ (the peer libraries the
 * benchmark measures) and sample/ (SQLite for the sample app, a native module). Each has its own
 * package.json and package-lock.json, so `npm install` at the root installs only the library's toolchain,
 * and nothing of theirs can reach an application that installs the package.
 *
 *   npm run extras               (both)
 *   npm run extras -- sample     (one)
 *
 * Installs a folder with `npm ci --prefix <folder>` when its node_modules is missing or differs from its
 * lockfile, and says so in one line; otherwise prints nothing. Run before `npm run lint`, `bench`, `demo` and
 * `sample` (their pre-scripts) and by Jest's global setup; never from an install hook, which would also run
 * in applications that install the package (postinstall always, prepare when installed from git).
 * Their code still resolves NestJS, ioredis and the library from the root node_modules (Node and TypeScript
 * look in every parent folder's node_modules).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..');

export const EXTRAS = {
  bench: "the benchmark's peer libraries: redlock, @sesamecare-oss/redlock, redlock-universal",
  sample:
    'better-sqlite3 for the sample app, a native module: without a prebuilt binary it compiles, about a minute',
} as const;

export type Extra = keyof typeof EXTRAS;

interface LockedPackage {
  readonly version?: string;
  readonly integrity?: string;
}

function packages(file: string): Record<string, LockedPackage> | undefined {
  try {
    return (JSON.parse(fs.readFileSync(file, 'utf8')) as { packages?: Record<string, LockedPackage> })
      .packages;
  } catch {
    return undefined;
  }
}

/**
 * Why `folder` needs `npm ci`, or undefined when its node_modules holds what its lockfile lists: npm
 * records what it installed in node_modules/.package-lock.json, compared here package by package.
 */
export function staleReason(folder: string): string | undefined {
  const modules = path.join(folder, 'node_modules');
  const wanted = packages(path.join(folder, 'package-lock.json'));
  if (!wanted)
    throw new Error(`extras: ${path.relative(ROOT, folder)}/package-lock.json is missing or unreadable`);
  const installed = packages(path.join(modules, '.package-lock.json'));
  if (!installed) return `${path.relative(ROOT, modules)} is missing`;
  const names = new Set([...Object.keys(wanted), ...Object.keys(installed)].filter((name) => name !== ''));
  for (const name of names) {
    const want = wanted[name];
    const have = installed[name];
    if (
      !want ||
      !have ||
      want.version !== have.version ||
      want.integrity !== have.integrity ||
      !fs.existsSync(path.join(folder, name))
    ) {
      return `${path.relative(ROOT, modules)} differs from its package-lock.json (${name})`;
    }
  }
  return undefined;
}

/** The npm that runs this script (npm run, npx), else the one on PATH. */
function npm(args: readonly string[]): { file: string; args: string[] } {
  const cli = process.env.npm_execpath;
  return cli && path.basename(cli) === 'npm-cli.js'
    ? { file: process.execPath, args: [cli, ...args] }
    : { file: 'npm', args: [...args] };
}

/**
 * Installs each of `extras` whose node_modules is missing or stale, one line each on `log` beforehand; npm's
 * own output goes to stderr, warnings left out (redlock-universal declares Node ≥ 22 and works on 20: the
 * benchmark's smoke test runs it).
 */
export function ensureExtras(
  extras: readonly Extra[] = Object.keys(EXTRAS) as Extra[],
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): void {
  for (const extra of extras) {
    const folder = path.join(ROOT, extra);
    const reason = staleReason(folder);
    if (reason === undefined) continue;
    log(`extras: npm ci --prefix ${extra} (${EXTRAS[extra]}), because ${reason}`);
    const command = npm(['ci', '--prefix', folder, '--no-audit', '--no-fund', '--loglevel=error']);
    const result = spawnSync(command.file, command.args, { cwd: ROOT, stdio: ['ignore', 2, 2] });
    if (result.error) throw new Error(`extras: could not run npm: ${result.error.message}`);
    if (result.status !== 0)
      throw new Error(`extras: npm ci --prefix ${extra} failed (exit ${result.status})`);
  }
}

function isExtra(name: string): name is Extra {
  return Object.prototype.hasOwnProperty.call(EXTRAS, name);
}

if (require.main === module) {
  try {
    const names = process.argv.slice(2);
    const unknown = names.filter((name) => !isExtra(name));
    if (unknown.length > 0) {
      throw new Error(
        `extras: unknown folder(s) ${unknown.join(', ')}; known: ${Object.keys(EXTRAS).join(', ')}`,
      );
    }
    ensureExtras(names.length > 0 ? (names as Extra[]) : undefined);
  } catch (error: unknown) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
