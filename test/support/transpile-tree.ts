import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..');

/** A transpiled copy of an entry file and everything it imports relatively from this repository. */
export interface TreeBuild {
  /** The entry point, plain JavaScript. */
  readonly entry: string;
  /** For NODE_PATH: packages (ioredis) resolve from the repository's node_modules. */
  readonly nodePath: string;
  /** Removes the copy. */
  dispose(): void;
}

/**
 * Transpiles `entryTs` and its relative imports (the library core among them) into a temporary folder, once,
 * with the TypeScript compiler this process has already loaded, so child processes and worker threads start
 * as plain Node in milliseconds — registering ts-node in each costs seconds of CPU on a shared two-core
 * machine. Type checking is `npm run lint`'s job. With `linkNodeModules`, packages also resolve from the
 * copy's own folder (worker threads ignore NODE_PATH). `transformers`, when given, names TypeScript
 * transformers to apply to a file (by its absolute path), e.g. to instrument the library's files.
 */
export function transpileTree(
  entryTs: string,
  name: string,
  linkNodeModules = false,
  transformers?: (file: string) => ts.CustomTransformers | undefined,
): TreeBuild {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), `nestjs-redlock-${name}-`));
  if (linkNodeModules) fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(out, 'node_modules'), 'dir');
  const compilerOptions: ts.CompilerOptions = {
    module: ts.ModuleKind.CommonJS,
    target: ts.ScriptTarget.ES2022,
    esModuleInterop: true,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    useDefineForClassFields: false,
  };
  const pending = [entryTs];
  const seen = new Set<string>();
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const source = fs.readFileSync(file, 'utf8');
    const output = ts.transpileModule(source, {
      compilerOptions,
      fileName: file,
      transformers: transformers?.(file),
    }).outputText;
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
    entry: path.join(out, path.relative(ROOT, entryTs)).replace(/\.ts$/, '.js'),
    nodePath: path.join(ROOT, 'node_modules'),
    dispose: () => fs.rmSync(out, { recursive: true, force: true }),
  };
}
