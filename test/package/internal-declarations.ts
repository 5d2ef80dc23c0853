import fs from 'node:fs';
import path from 'node:path';

const REPO = path.resolve(__dirname, '..', '..');
const LIB = path.join(REPO, 'lib');

/** A TSDoc comment, then the name of the declaration it documents (after its modifiers). */
const DOCUMENTED =
  /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*(?:export\s+)?(?:declare\s+)?(?:(?:private|protected|public|readonly|static|async|abstract|get|set|function|class|interface|type|const|let|enum)\s+)*([A-Za-z_$][\w$]*)/g;
/** Names the tag can stand on without naming a member: an internal constructor overload, `export type {…}`. */
const NOT_NAMES = new Set(['constructor', 'type', 'import']);

/** Every declaration in lib/ marked `@internal`, by the lib-relative path of its file (`core/lock.ts`). */
export function internalDeclarations(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of sourcesUnder(LIB)) {
    const source = fs.readFileSync(file, 'utf8');
    const internal = new Set<string>();
    const published = new Set<string>();
    for (const match of source.matchAll(DOCUMENTED)) {
      if (NOT_NAMES.has(match[2])) continue;
      (/@internal\b/.test(match[1]) ? internal : published).add(match[2]);
    }
    // An internal overload of a published method (`lead(..., runTerm)`) hides that signature, not the name.
    const names = [...internal].filter((name) => !published.has(name));
    if (names.length > 0) found.set(path.relative(LIB, file), names);
  }
  return found;
}

/**
 * The `@internal` declarations that a folder of built declarations (`dist/` or a tarball's) still declares,
 * as `file: name`: each name is looked for as a declaration (member, function, type) in its own file's .d.ts.
 */
export function leakedInternals(declarationsDir: string): string[] {
  const leaks: string[] = [];
  for (const [file, names] of internalDeclarations()) {
    const dts = path.join(declarationsDir, file.replace(/\.ts$/, '.d.ts'));
    if (!fs.existsSync(dts)) continue;
    // Declarations only: the comments may mention a name in passing.
    const text = fs
      .readFileSync(dts, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/\/\/.*$/gm, '');
    for (const name of names) {
      const declared = new RegExp(
        `(^|[\\s;{(])(?:(?:readonly|private|protected|static|get|set|declare|export|function|class|interface|type|const)\\s+)*${name}\\??\\s*[:(<=]|(?:interface|type|class|function)\\s+${name}\\b`,
        'm',
      );
      if (declared.test(text)) leaks.push(`${file}: ${name}`);
    }
  }
  return leaks;
}

function sourcesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}
