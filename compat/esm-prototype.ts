import * as fs from 'node:fs';
import * as path from 'node:path';
import { Ran, failure, run } from './proc';

/**
 * A throwaway prototype of what an ESM build of the library would look like — built in a temp directory
 * from lib/ and the regular dist/, never touching either — to check that the `import` condition alone lets an
 * ESM app use the library without require(esm):
 *
 * - `tsc -p tsconfig.build.json --module esnext --moduleResolution bundler` into `dist/esm/`;
 * - the extensionless relative specifiers of lib/ (`'./core'`, `'./redlock.service'`) rewritten to what
 *   Node's ESM resolver demands (`'./core/index.js'`, `'./redlock.service.js'`);
 * - modules that call `require()` lazily (ioredis when the library creates a client, @opentelemetry/api) given
 *   `const require = createRequire(import.meta.url)`, as ESM has no `require`;
 * - `dist/esm/package.json` = `{ "type": "module" }`;
 * - package.json `exports["."]` = `{ types, import: ./dist/esm/index.js, default: ./dist/index.js }`.
 */
export async function packEsmPrototype(
  repo: string,
  stage: string,
  outDir: string,
): Promise<{ tarball?: string; error?: string; rewritten: number; requires: number }> {
  fs.rmSync(stage, { recursive: true, force: true });
  fs.mkdirSync(stage, { recursive: true });
  fs.cpSync(path.join(repo, 'dist'), path.join(stage, 'dist'), { recursive: true });
  fs.copyFileSync(path.join(repo, 'README.md'), path.join(stage, 'README.md'));
  const esmDir = path.join(stage, 'dist', 'esm');
  const tsc = path.join(repo, 'node_modules', '.bin', 'tsc');
  const args = ['-p', 'tsconfig.build.json', '--module', 'esnext', '--moduleResolution', 'bundler'];
  const built = await run(tsc, [...args, '--outDir', esmDir, '--declaration', 'false'], {
    cwd: repo,
    timeoutMs: 120_000,
  });
  if (built.code !== 0) return { error: failure(built), rewritten: 0, requires: 0 };
  const rewritten = rewriteSpecifiers(esmDir);
  const requires = provideRequire(esmDir);
  fs.writeFileSync(path.join(esmDir, 'package.json'), '{ "type": "module" }\n');

  const pkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8'));
  pkg.version = `${pkg.version}-esm-prototype`;
  pkg.exports = {
    '.': { types: './dist/index.d.ts', import: './dist/esm/index.js', default: './dist/index.js' },
    './package.json': './package.json',
  };
  delete pkg.scripts;
  delete pkg.devDependencies;
  fs.writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  const packed: Ran = await run('npm', ['pack', '--pack-destination', outDir, '--json'], {
    cwd: stage,
    timeoutMs: 120_000,
  });
  if (packed.code !== 0) return { error: failure(packed), rewritten, requires };
  const [{ filename }] = JSON.parse(packed.stdout) as Array<{ filename: string }>;
  return { tarball: path.join(outDir, filename), rewritten, requires };
}

/** `from './x'` → `from './x.js'` or `'./x/index.js'`, as the file system says; returns how many. */
function rewriteSpecifiers(dir: string): number {
  let count = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
    const file = path.join(entry.parentPath ?? entry.path, entry.name);
    const source = fs.readFileSync(file, 'utf8');
    const out = source.replace(
      /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]*)\2/g,
      (whole, lead: string, quote: string, spec: string) => {
        if (spec.endsWith('.js')) return whole;
        const target = path.resolve(path.dirname(file), spec);
        const resolved = fs.existsSync(`${target}.js`)
          ? `${spec}.js`
          : fs.existsSync(path.join(target, 'index.js'))
            ? `${spec}/index.js`
            : undefined;
        if (!resolved) return whole;
        count++;
        return `${lead}${quote}${resolved}${quote}`;
      },
    );
    if (out !== source) fs.writeFileSync(file, out);
  }
  return count;
}

/** Gives each module that calls a bare `require(...)` one from `createRequire(import.meta.url)`; returns how many. */
function provideRequire(dir: string): number {
  let count = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.js')) continue;
    const file = path.join(entry.parentPath ?? entry.path, entry.name);
    const source = fs.readFileSync(file, 'utf8');
    if (!/(^|[^.\w$])require\s*\(/m.test(source)) continue;
    const prelude =
      "import { createRequire as __compatCreateRequire } from 'node:module';\n" +
      'const require = __compatCreateRequire(import.meta.url);\n';
    fs.writeFileSync(file, prelude + source);
    count++;
  }
  return count;
}
