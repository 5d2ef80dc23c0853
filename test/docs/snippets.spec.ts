import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildLibrary } from '../package/packed-package';
import {
  NEST_CLI_COMPILER_OPTIONS,
  Snippet,
  compileSnippets,
  extractSnippets,
  formatReport,
  manualFiles,
} from './snippets';

/**
 * The manual's code compiles: every ```ts block of README.md and docs/*.md is compiled, each as a module of
 * its own, against the declarations the package ships (tsconfig.build.json, stripInternal), in a project set
 * up as the Nest CLI sets one up (CommonJS, decorators with metadata, strict). A block that is not meant to
 * compile carries `<!-- snippet: no-compile -->` on the line before its fence. A failure names the block
 * (file and line) and tsc's diagnostics, at their lines in the Markdown file.
 */
const REPO = path.resolve(__dirname, '..', '..');

/**
 * Names a block may use without declaring them, as if they were in scope where the block is shown. Keep it
 * small: a block a user pastes should bring its own imports.
 */
const PRELUDE = `// Global declarations for the manual's blocks (test/docs/snippets.spec.ts).
declare const redlock: import('nestjs-redlock').Redlock;
`;

/** Blocks that must fail or be skipped: the checker's negative control, compiled in the same run. */
const NEGATIVE_CONTROL = [
  'A broken block:',
  '```ts',
  "import { Redlock } from 'nestjs-redlock';",
  "const redlock = new Redlock(['redis://127.0.0.1:6379']);",
  'redlock.acquire(42);',
  '```',
  '<!-- snippet: no-compile -->',
  '```ts',
  'this is not TypeScript',
  '```',
  'Top-level await in a CommonJS project:',
  '```ts',
  "import { Redlock } from 'nestjs-redlock';",
  'await new Redlock([]).quit();',
  '```',
  'A block that compiles:',
  '```ts',
  'const n: number = redlock.stats.locksLost;',
  '```',
  '',
].join('\n');

describe('the code blocks of README.md and docs/*.md compile', () => {
  let dir: string;
  let manual: Snippet[];
  let control: Snippet[];
  let result: ReturnType<typeof compileSnippets>;

  beforeAll(() => {
    manual = manualFiles(REPO).flatMap((file) =>
      extractSnippets(file, fs.readFileSync(path.join(REPO, file), 'utf8')),
    );
    control = extractSnippets('negative-control.md', NEGATIVE_CONTROL);
    // Inside the repository, so that the blocks and the declarations resolve @nestjs/* from its node_modules.
    dir = fs.mkdtempSync(path.join(REPO, '.snippets-'));
    buildLibrary(path.join(dir, 'nestjs-redlock'), true);
    const compiled = [...manual, ...control].filter((snippet) => !snippet.skipped);
    // `nestjs-redlock`: the declarations built above (an absolute path, as these options have no tsconfig).
    const paths = { 'nestjs-redlock': [path.join(dir, 'nestjs-redlock', 'index.d.ts')] };
    result = compileSnippets(
      dir,
      compiled,
      { ...NEST_CLI_COMPILER_OPTIONS, paths },
      { 'prelude.d.ts': PRELUDE },
    );
  }, 120_000);
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('finds the blocks', () => {
    expect(manual.filter((s) => s.file === 'README.md').length).toBeGreaterThanOrEqual(4);
    expect(control.map((s) => [s.line, s.skipped])).toEqual([
      [2, false],
      [8, true],
      [12, false],
      [17, false],
    ]);
  });

  it('every block not marked no-compile compiles', () => {
    const errors = result.errors.filter((e) => e.snippet.file !== 'negative-control.md');
    expect(formatReport(errors)).toBe('');
    // tsc said nothing about other files (the prelude, the declarations, the project).
    expect(result.other).toEqual([]);
  });

  it('reports a broken block with its file and line (negative control), skips a marked one', () => {
    const errors = result.errors.filter((e) => e.snippet.file === 'negative-control.md');
    expect(errors.map((e) => `${e.where} ${e.message.slice(0, 'error TS0000'.length)}`)).toEqual([
      expect.stringMatching(/^negative-control\.md:5:\d+ error TS2345$/),
      expect.stringMatching(/^negative-control\.md:14:\d+ error TS1378$/),
    ]);
    expect(formatReport(errors)).toContain('```ts block at negative-control.md:2 does not compile:');
  });
});
