import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

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
  for (const dependency of dependencies) {
    // 'redis=redis6': the package installed here as redis6 (an npm alias), seen by the app as redis.
    const [name, source = name] = dependency.split('=');
    const link = path.join(modules, name);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(path.join(REPO, 'node_modules', source), link, 'dir');
  }
  return target;
}

/**
 * Type-checks (and unless --noEmit, emits) the project in `dir` (its tsconfig.json, then `extraArgs` as on tsc's
 * command line) with the repository's TypeScript, in this process; `reports(file)` (a path relative to `dir`)
 * says whose diagnostics are computed. With skipLibCheck off, tsc would also check every other package's d.ts
 * (@types/node, @nestjs/*, rxjs: ~70 % of its time), whose errors the callers drop anyway. The output is tsc's
 * (--pretty false): `src/x.ts(2,5): error TS2345: ...`, file names relative to `dir`.
 */
export function typeCheck(
  dir: string,
  extraArgs: readonly string[],
  reports: (file: string) => boolean,
): { code: number; output: string } {
  const host: ts.FormatDiagnosticsHost = {
    getCurrentDirectory: () => dir,
    getCanonicalFileName: (name) => name,
    getNewLine: () => '\n',
  };
  const cli = ts.parseCommandLine([...extraArgs]);
  const parsed = ts.getParsedCommandLineOfConfigFile(path.join(dir, 'tsconfig.json'), cli.options, {
    ...ts.sys,
    getCurrentDirectory: () => dir,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.formatDiagnostics([d], host));
    },
  })!;
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
  const diagnostics: ts.Diagnostic[] = [
    ...cli.errors,
    ...parsed.errors,
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
  ];
  for (const source of program.getSourceFiles()) {
    if (!reports(path.relative(dir, source.fileName))) continue;
    diagnostics.push(...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source));
  }
  // File by file: emitting the whole program at once would first check every file, every d.ts included.
  if (!parsed.options.noEmit)
    for (const source of program.getSourceFiles())
      if (!source.isDeclarationFile && reports(path.relative(dir, source.fileName)))
        diagnostics.push(...program.emit(source).diagnostics);
  const errors = diagnostics.filter((d) => d.category === ts.DiagnosticCategory.Error);
  return { code: errors.length > 0 ? 2 : 0, output: ts.formatDiagnostics(diagnostics, host) };
}
