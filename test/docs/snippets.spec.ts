import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildLibrary } from '../package/packed-package';
import {
  NEST_CLI_COMPILER_OPTIONS,
  Snippet,
  SnippetLintMessage,
  compileSnippets,
  extractSnippets,
  formatLintReport,
  formatReport,
  lintFailures,
  lintSnippets,
  manualFiles,
} from './snippets';

/**
 * The manual's code compiles: every ```ts block of README.md and docs/*.md is compiled, each as a module of
 * its own, against the declarations the package ships (tsconfig.build.json, stripInternal), in a project set
 * up as the Nest CLI sets one up (CommonJS, decorators with metadata, strict). A block that is not meant to
 * compile carries `<!-- snippet: no-compile -->` on the line before its fence. A failure names the block
 * (file and line) and tsc's diagnostics, at their lines in the Markdown file.
 *
 * README's blocks also pass the ESLint config of a fresh `nest new` app (`eslint.config.mjs` of the NestJS 11
 * template: typed linting, floating promises, unused variables and parameters, ...), linted in the same
 * folder with a tsconfig.json listing them: a user pastes them into such an app and runs its `npm run lint`.
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

/**
 * The lint check's negative control, linted in the same run as README's blocks: a floating promise, an unused
 * parameter, a block that is only badly formatted (tolerated: the app's `eslint --fix` reformats it) and a
 * clean one that uses the prelude (typed linting sees the project's types: nothing is `any`).
 */
const LINT_CONTROL = [
  'A floating promise:',
  '```ts',
  "import { Redlock } from 'nestjs-redlock';",
  'async function main(): Promise<void> {',
  '  await new Redlock([]).quit();',
  '}',
  'main();',
  '```',
  'An unused parameter:',
  '```ts',
  'export function label(id: string, unused: number): string {',
  '  return `order:${id}`;',
  '}',
  '```',
  'Formatting only:',
  '```ts',
  'export const ttl = {value:5_000}',
  '```',
  'A clean block:',
  '```ts',
  'export const lost: number = redlock.stats.locksLost;',
  '```',
  '',
].join('\n');

describe('the code blocks of README.md and docs/*.md compile', () => {
  let dir: string;
  let manual: Snippet[];
  let control: Snippet[];
  let result: ReturnType<typeof compileSnippets>;
  let compiledReadme: Snippet[];
  let lintControl: Snippet[];
  let lint: Awaited<ReturnType<typeof lintSnippets>>;

  beforeAll(async () => {
    manual = manualFiles(REPO).flatMap((file) =>
      extractSnippets(file, fs.readFileSync(path.join(REPO, file), 'utf8')),
    );
    control = extractSnippets('negative-control.md', NEGATIVE_CONTROL);
    // Inside the repository, so that the blocks and the declarations resolve @nestjs/* from its node_modules.
    dir = fs.mkdtempSync(path.join(REPO, '.snippets-'));
    buildLibrary(path.join(dir, 'nestjs-redlock'), true);
    const compiled = [...manual, ...control].filter((snippet) => !snippet.skipped);
    // `nestjs-redlock`: the declarations built above (an absolute path, as these options have no tsconfig).
    const paths = {
      'nestjs-redlock': [path.join(dir, 'nestjs-redlock', 'index.d.ts')],
      'nestjs-redlock/core': [path.join(dir, 'nestjs-redlock', 'standalone.d.ts')],
    };
    result = compileSnippets(
      dir,
      compiled,
      { ...NEST_CLI_COMPILER_OPTIONS, paths },
      { 'prelude.d.ts': PRELUDE },
    );
    // README's blocks again, through ESLint (one instance, one lintFiles call), with the lint control.
    compiledReadme = compiled.filter((snippet) => snippet.file === 'README.md');
    lintControl = extractSnippets('lint-control.md', LINT_CONTROL);
    lint = await lintSnippets(
      dir,
      [...compiledReadme, ...lintControl],
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

  describe("README's blocks pass a fresh Nest app's ESLint config", () => {
    const ofFile = (messages: readonly SnippetLintMessage[], file: string) =>
      messages.filter((m) => m.snippet.file === file);

    it('lints every README block it compiles', () => {
      const lines = (snippets: readonly Snippet[]) => snippets.map((s) => s.line).sort((a, b) => a - b);
      const linted = lint.linted.filter((s) => s.file === 'README.md');
      expect(linted.length).toBeGreaterThan(0);
      expect(linted).toHaveLength(compiledReadme.length);
      expect(lines(linted)).toEqual(lines(compiledReadme));
      expect(lint.linted.filter((s) => s.file === 'lint-control.md')).toHaveLength(lintControl.length);
    });

    it('every README block passes (formatting aside: the app reformats it)', () => {
      expect(formatLintReport(lintFailures(ofFile(lint.messages, 'README.md')))).toBe('');
    });

    it('reports a floating promise and an unused parameter (negative control)', () => {
      const messages = ofFile(lint.messages, 'lint-control.md');
      expect(lintFailures(messages).map((m) => `${m.where} ${m.severity} ${m.ruleId}`)).toEqual([
        'lint-control.md:7:1 warning @typescript-eslint/no-floating-promises',
        'lint-control.md:11:35 error @typescript-eslint/no-unused-vars',
      ]);
      // The prettier rule ran (the app's .prettierrc: spaces in braces, semicolons), its fix is tolerated.
      expect(
        messages.filter((m) => m.ruleId === 'prettier/prettier').map((m) => [m.where, m.fixable]),
      ).toEqual([[expect.stringMatching(/^lint-control\.md:17:\d+$/), true]]);
      expect(formatLintReport(lintFailures(messages))).toContain(
        "```ts block at lint-control.md:2 does not pass a fresh Nest app's ESLint config:",
      );
    });
  });
});
