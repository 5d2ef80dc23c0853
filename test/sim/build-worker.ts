import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..');

/** The worker thread's entry point as plain JavaScript, and how to remove it. */
export interface WorkerBuild {
  readonly entry: string;
  dispose(): void;
}

/**
 * Transpiles `worker-main.ts` and everything it imports relatively (the simulation, the checkers, the core)
 * into a temporary directory, once, with the TypeScript compiler this process has already loaded. A worker
 * then starts as plain Node in a few milliseconds, where registering ts-node in it cost seconds of CPU.
 * Packages (ioredis, for the core's node specs) resolve through a `node_modules` link to the repository's.
 */
export function buildWorker(): WorkerBuild {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'nestjs-redlock-sim-'));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(out, 'node_modules'), 'dir');
  const compilerOptions: ts.CompilerOptions = {
    module: ts.ModuleKind.CommonJS,
    target: ts.ScriptTarget.ES2022,
    esModuleInterop: true,
    experimentalDecorators: true,
    useDefineForClassFields: false,
  };
  const pending = [path.join(__dirname, 'worker-main.ts')];
  const seen = new Set<string>();
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const source = fs.readFileSync(file, 'utf8');
    const output = ts.transpileModule(source, { compilerOptions, fileName: file }).outputText;
    const target = path.join(out, path.relative(ROOT, file)).replace(/\.ts$/, '.js');
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, output);
    for (const [, specifier] of source.matchAll(
      /(?:\bfrom|\bimport|\brequire\()\s*['"](\.\.?\/[^'"]*)['"]/g,
    )) {
      const base = path.resolve(path.dirname(file), specifier);
      const found = [`${base}.ts`, path.join(base, 'index.ts')].find((candidate) => fs.existsSync(candidate));
      if (found) pending.push(found);
    }
  }
  return {
    entry: path.join(out, path.relative(ROOT, path.join(__dirname, 'worker-main.js'))),
    dispose: () => fs.rmSync(out, { recursive: true, force: true }),
  };
}
