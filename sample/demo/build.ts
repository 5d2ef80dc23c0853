import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/**
 * Transpiles `lib/` and `sample/` (not this folder) to JavaScript in `outDir`, once, so each instance the
 * demo starts is a plain `node` process: ts-node would transpile everything again in every instance, at
 * every restart. Type checking is `npm run lint`'s job, not the demo's.
 */
export function buildSample(root: string, outDir: string): number {
  const { config, error } = ts.readConfigFile(path.join(root, 'tsconfig.json'), ts.sys.readFile);
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, root);
  const compilerOptions: ts.CompilerOptions = {
    ...options,
    declaration: false,
    sourceMap: false,
    inlineSourceMap: true,
    inlineSources: true,
  };
  let files = 0;
  const demoDir = path.join(root, 'sample', 'demo');
  const visit = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (file !== demoDir) visit(file);
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        const { outputText } = ts.transpileModule(fs.readFileSync(file, 'utf8'), {
          compilerOptions,
          fileName: file,
        });
        const out = path.join(outDir, path.relative(root, file)).replace(/\.ts$/, '.js');
        fs.mkdirSync(path.dirname(out), { recursive: true });
        fs.writeFileSync(out, outputText);
        files++;
      }
    }
  };
  visit(path.join(root, 'lib'));
  visit(path.join(root, 'sample'));
  return files;
}
