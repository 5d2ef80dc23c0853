import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/**
 * The shape limits of lib/ (issue "rooms three", docs/DESIGN.md §0): how many files a folder holds, how many
 * lines a file has, how many lines a function spans. Used by test/architecture.spec.ts and by
 * `node -r ts-node/register/transpile-only scripts/code-shape.ts [DIR]`, which prints what is over.
 */
export const LIMITS = Object.freeze({ filesPerFolder: 15, linesPerFile: 400, linesPerFunction: 60 });

export interface ShapeFinding {
  readonly kind: 'folder' | 'file' | 'function';
  readonly where: string;
  readonly size: number;
}

function walk(dir: string): { files: string[]; folders: string[] } {
  const files: string[] = [];
  const folders: string[] = [dir];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      const inner = walk(full);
      files.push(...inner.files);
      folders.push(...inner.folders);
    } else if (entry.name.endsWith('.ts')) files.push(full);
  }
  return { files, folders };
}

/** Every function-like node of a source text with the lines it spans (first line to last, inclusive). */
export function functionSpans(
  fileName: string,
  text: string,
): { name: string; lines: number; line: number }[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const spans: { name: string; lines: number; line: number }[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const named = (node as { name?: ts.Node }).name;
      const name = named ? named.getText(source) : ts.SyntaxKind[node.kind];
      spans.push({ name, lines: last - first + 1, line: first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return spans;
}

/** What in `root` is over {@link LIMITS}, paths relative to `root`'s parent. */
export function shapeFindings(root: string, limits = LIMITS): ShapeFinding[] {
  const base = path.dirname(root);
  const { files, folders } = walk(root);
  const findings: ShapeFinding[] = [];
  for (const folder of folders) {
    const count = fs.readdirSync(folder).filter((name) => name.endsWith('.ts')).length;
    if (count > limits.filesPerFolder) {
      findings.push({ kind: 'folder', where: path.relative(base, folder), size: count });
    }
  }
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    const where = path.relative(base, file);
    if (lines > limits.linesPerFile) findings.push({ kind: 'file', where, size: lines });
    for (const span of functionSpans(file, text)) {
      if (span.lines > limits.linesPerFunction) {
        findings.push({ kind: 'function', where: `${where}:${span.line} ${span.name}`, size: span.lines });
      }
    }
  }
  return findings;
}

if (require.main === module) {
  const root = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'lib'));
  const findings = shapeFindings(root);
  for (const f of findings) console.log(`${f.kind.padEnd(8)} ${String(f.size).padStart(4)}  ${f.where}`);
  console.log(`${findings.length} over the limits (${JSON.stringify(LIMITS)})`);
}
