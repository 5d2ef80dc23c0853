import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The repository root (the package being packed). */
export const REPO = path.resolve(__dirname, '..', '..');

/**
 * The library as `npm run build` builds it (tsconfig.build.json: lib/ only, stripInternal), into `outDir`;
 * with `declarationsOnly`, the .d.ts files alone.
 */
export function buildLibrary(
  outDir: string,
  declarationsOnly = false,
  extraArgs: readonly string[] = [],
): void {
  const args = [
    '-p',
    'tsconfig.build.json',
    '--outDir',
    outDir,
    ...(declarationsOnly ? ['--emitDeclarationOnly'] : []),
    ...extraArgs,
  ];
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), ...args], {
    cwd: REPO,
    stdio: 'pipe',
    timeout: 120_000,
  });
}

/**
 * `npm pack` into `destination` (npm runs `prepack`, which builds `dist/`); returns the tarball's path.
 * `--json` sends the lifecycle scripts' output to stderr; the tarball is found by listing the folder.
 */
export function packInto(destination: string): string {
  execFileSync('npm', ['pack', '--json', '--pack-destination', destination], {
    cwd: REPO,
    stdio: 'pipe',
    timeout: 120_000,
  });
  const tarballs = fs.readdirSync(destination).filter((name) => name.endsWith('.tgz'));
  if (tarballs.length !== 1) throw new Error(`npm pack left ${tarballs.length} tarballs in ${destination}`);
  return path.join(destination, tarballs[0]);
}

/** The paths inside the tarball, without npm's `package/` folder. */
export function tarballFiles(tarball: string): string[] {
  return execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line && !line.endsWith('/'))
    .map((line) => line.replace(/^package\//, ''))
    .sort();
}

/**
 * Installs the tarball into `<app>/node_modules/nestjs-redlock` the way npm lays it out (extracted, no
 * dependencies of its own: it has only peers), and links the app's other dependencies to the repository's
 * `node_modules`, so the test needs no network. Node resolves a symlinked package from its real path, so
 * `@nestjs/core` and the app share one `@nestjs/common`.
 */
export function installInto(app: string, tarball: string, dependencies: readonly string[]): string {
  const modules = path.join(app, 'node_modules');
  const target = path.join(modules, 'nestjs-redlock');
  fs.mkdirSync(target, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', target, '--strip-components=1'], { stdio: 'pipe' });
  for (const name of dependencies) {
    const link = path.join(modules, name);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(path.join(REPO, 'node_modules', name), link, 'dir');
  }
  return target;
}

/**
 * Runs the repository's TypeScript compiler on the project in `dir` (its tsconfig.json), from that folder so
 * that diagnostics name files relative to it; returns the exit code and the output.
 */
export function tsc(dir: string, extraArgs: readonly string[] = []): { code: number; output: string } {
  try {
    const output = execFileSync(
      process.execPath,
      [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json', '--pretty', 'false', ...extraArgs],
      { cwd: dir, encoding: 'utf8', stdio: 'pipe', timeout: 120_000 },
    );
    return { code: 0, output };
  } catch (error) {
    const failed = error as { status?: number; stdout?: string; stderr?: string };
    return { code: failed.status ?? 1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}
