import * as fs from 'node:fs';
import * as path from 'node:path';
import eslint from '@eslint/js';
import { ESLint, Linter } from 'eslint';
import eslintPluginPrettierRecommended from 'eslint-plugin-prettier/recommended';
import globals from 'globals';
import * as ts from 'typescript';
import tseslint from 'typescript-eslint';

/** The comment, on the line right before a fence, that exempts a block from compiling. */
export const NO_COMPILE = '<!-- snippet: no-compile -->';

/** One TypeScript block of a Markdown file. */
export interface Snippet {
  /** The Markdown file, relative to the repository. */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  /** The block's code, without the fences (common indentation removed). */
  readonly code: string;
  /** Marked `<!-- snippet: no-compile -->`. */
  readonly skipped: boolean;
}

const OPEN = /^(\s*)```(ts|typescript)\s*$/;
const CLOSE = /^\s*```\s*$/;

/** Every ```ts / ```typescript block of a Markdown text, with where it starts. */
export function extractSnippets(file: string, markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const snippets: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = OPEN.exec(lines[i]);
    if (!open) continue;
    const indent = open[1].length;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !CLOSE.test(lines[j])) body.push(lines[j++].slice(indent));
    if (j === lines.length) throw new Error(`${file}:${i + 1}: a \`\`\`ts block is never closed`);
    const skipped = i > 0 && lines[i - 1].trim() === NO_COMPILE;
    snippets.push({ file, line: i + 1, code: body.join('\n'), skipped });
    i = j;
  }
  return snippets;
}

/**
 * The first ```ts block of the section under `heading` (a `#`…`######` line with exactly that text), up to the
 * next heading of any level. Throws, naming the heading, when there is no such section or no block in it: a
 * test built on a block must fail when the manual is reorganised, never skip.
 */
export function sectionSnippet(file: string, markdown: string, heading: string): Snippet {
  const lines = markdown.split('\n');
  const isHeading = (line: string) => /^#{1,6} /.test(line);
  const start = lines.findIndex((line) => isHeading(line) && line.replace(/^#+ /, '').trim() === heading);
  if (start < 0) throw new Error(`${file} has no heading "${heading}"`);
  const next = lines.findIndex((line, i) => i > start && isHeading(line));
  const end = next < 0 ? lines.length : next;
  const found = extractSnippets(file, markdown).find((s) => s.line > start + 1 && s.line <= end);
  if (!found) throw new Error(`${file}: the section "${heading}" (line ${start + 1}) has no \`\`\`ts block`);
  return found;
}

/**
 * A project as the Nest CLI sets one up (CommonJS, decorators with metadata, strict), for compiling the
 * manual's blocks; `noEmit` unless a caller wants JavaScript.
 */
export const NEST_CLI_COMPILER_OPTIONS = {
  target: 'ES2022',
  module: 'commonjs',
  moduleResolution: 'node',
  strict: true,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  esModuleInterop: true,
  skipLibCheck: true,
  noEmit: true,
  types: ['node'],
};

/** README.md and docs/*.md of a repository, in that order. */
export function manualFiles(repo: string): string[] {
  const docs = path.join(repo, 'docs');
  const inDocs = fs.existsSync(docs)
    ? fs
        .readdirSync(docs)
        .filter((name) => name.endsWith('.md'))
        .sort()
        .map((name) => path.join('docs', name))
    : [];
  return ['README.md', ...inDocs];
}

/** The file name a snippet is compiled under: `README.md-34.ts`. */
export const snippetFileName = (snippet: Snippet) =>
  `${snippet.file.replace(/[\\/]/g, '__')}-${snippet.line}.ts`;

/**
 * The snippet as a module of its own (an `export {}` appended, so blocks never share a scope), with its code
 * starting on line 1: a diagnostic on line n is on line `snippet.line + n` of the Markdown file.
 */
export const snippetSource = (snippet: Snippet) => `${snippet.code}\nexport {};\n`;

/** One diagnostic of a snippet, mapped back to the Markdown file. */
export interface SnippetError {
  readonly snippet: Snippet;
  /** `README.md:35:12` — where in the Markdown file. */
  readonly where: string;
  /** `error TS2345: ...` */
  readonly message: string;
}

/**
 * Compiles the snippets, written as files into `dir` (inside the repository, so that packages resolve from
 * its node_modules), next to `extraFiles` (a prelude, say). Every file's syntactic and semantic diagnostics
 * are collected — tsc on the command line stops at syntax errors, and one block's would hide another's type
 * errors. Diagnostics about anything but a snippet (the options, the prelude) are returned as `other`.
 * Without `noEmit`, each snippet's JavaScript is written next to it (`snippetFileName` with `.js`).
 */
export function compileSnippets(
  dir: string,
  snippets: readonly Snippet[],
  compilerOptions: Record<string, unknown>,
  extraFiles: Readonly<Record<string, string>> = {},
): { errors: SnippetError[]; other: string[] } {
  const byPath = new Map<string, Snippet>();
  for (const snippet of snippets) {
    const file = path.join(dir, snippetFileName(snippet));
    fs.writeFileSync(file, snippetSource(snippet));
    byPath.set(file, snippet);
  }
  const extra = Object.entries(extraFiles).map(([name, text]) => {
    fs.writeFileSync(path.join(dir, name), text);
    return path.join(dir, name);
  });
  const converted = ts.convertCompilerOptionsFromJson(compilerOptions, dir);
  const program = ts.createProgram([...extra, ...byPath.keys()], converted.options);
  const errors: SnippetError[] = [];
  const other = [
    ...converted.errors,
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
  ].map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  for (const source of program.getSourceFiles()) {
    const snippet = byPath.get(path.normalize(source.fileName));
    const isExtra = extra.includes(path.normalize(source.fileName));
    if (!snippet && !isExtra) continue;
    const diagnostics = [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ];
    for (const d of diagnostics) {
      const text = `error TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      const at = source.getLineAndCharacterOfPosition(d.start ?? 0);
      if (!snippet) {
        other.push(`${path.basename(source.fileName)}:${at.line + 1}: ${text}`);
        continue;
      }
      errors.push({
        snippet,
        where: `${snippet.file}:${snippet.line + at.line + 1}:${at.character + 1}`,
        message: text,
      });
    }
  }
  if (!converted.options.noEmit) {
    const emitted = program.emit();
    other.push(...emitted.diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')));
  }
  return { errors, other };
}

/** A report a reader can act on: each failing block (file and fence line), then its diagnostics. */
export function formatReport(errors: readonly SnippetError[]): string {
  const blocks = new Map<Snippet, SnippetError[]>();
  for (const error of errors) blocks.set(error.snippet, [...(blocks.get(error.snippet) ?? []), error]);
  return [...blocks]
    .map(
      ([snippet, list]) =>
        `\`\`\`ts block at ${snippet.file}:${snippet.line} does not compile:\n` +
        list.map((e) => `  ${e.where}: ${e.message}`).join('\n'),
    )
    .join('\n\n');
}

/**
 * The `.prettierrc` of a fresh `nest new` app (@nestjs/schematics 11, application template); the
 * `prettier/prettier` rule of its ESLint config formats by it, not by this repository's `.prettierrc`.
 */
export const NEST_APP_PRETTIERRC = { singleQuote: true, trailingComma: 'all' };

/**
 * The `eslint.config.mjs` of a fresh `nest new` app (NestJS 11 CLI: @nestjs/schematics 11.1.0's application
 * template, the same as nestjs/typescript-starter's), as a flat config, with `tsconfigRootDir` where the
 * template has `import.meta.dirname`: typed linting through the project service, which finds each file's
 * nearest tsconfig.json.
 */
export function nestAppEslintConfig(tsconfigRootDir: string): Linter.Config[] {
  return tseslint.config(
    {
      ignores: ['eslint.config.mjs'],
    },
    eslint.configs.recommended,
    ...tseslint.configs.recommendedTypeChecked,
    eslintPluginPrettierRecommended,
    {
      languageOptions: {
        globals: {
          ...globals.node,
          ...globals.jest,
        },
        sourceType: 'commonjs',
        parserOptions: {
          projectService: true,
          tsconfigRootDir,
        },
      },
    },
    {
      rules: {
        '@typescript-eslint/no-explicit-any': 'off',
        '@typescript-eslint/no-floating-promises': 'warn',
        '@typescript-eslint/no-unsafe-argument': 'warn',
        'prettier/prettier': ['error', { endOfLine: 'auto' }],
      },
    },
  ) as Linter.Config[];
}

/** One ESLint message of a snippet, mapped back to the Markdown file. */
export interface SnippetLintMessage {
  readonly snippet: Snippet;
  /** `README.md:35:12` — where in the Markdown file. */
  readonly where: string;
  /** `@typescript-eslint/no-floating-promises`; `null` for a parsing error. */
  readonly ruleId: string | null;
  readonly severity: 'error' | 'warning';
  /** ESLint can fix it (`eslint --fix`, which a Nest app's `npm run lint` runs, rewrites the code). */
  readonly fixable: boolean;
  /** `warning @typescript-eslint/no-floating-promises: Promises must be awaited, ...` */
  readonly message: string;
}

/**
 * Lints the snippets as a fresh Nest app's `npm run lint` would, with one ESLint instance and one `lintFiles`
 * call. Each snippet is written into `dir` (`snippetFileName`, `snippetSource`), next to a tsconfig.json that
 * lists them and `extraFiles` (a prelude) under `compilerOptions` (the project service finds it), and the
 * Nest app's `.prettierrc`. Returns every message, warnings included, and the snippets ESLint linted (one it
 * skipped is missing there).
 */
export async function lintSnippets(
  dir: string,
  snippets: readonly Snippet[],
  compilerOptions: Record<string, unknown>,
  extraFiles: Readonly<Record<string, string>> = {},
): Promise<{ messages: SnippetLintMessage[]; linted: Snippet[] }> {
  const byPath = new Map<string, Snippet>();
  for (const snippet of snippets) {
    const file = path.join(dir, snippetFileName(snippet));
    fs.writeFileSync(file, snippetSource(snippet));
    byPath.set(file, snippet);
  }
  for (const [name, text] of Object.entries(extraFiles)) fs.writeFileSync(path.join(dir, name), text);
  const files = [...Object.keys(extraFiles), ...[...byPath.keys()].map((file) => path.basename(file))];
  const tsconfig = { compilerOptions: { ...compilerOptions, noEmit: true }, files };
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  fs.writeFileSync(path.join(dir, '.prettierrc'), JSON.stringify(NEST_APP_PRETTIERRC, null, 2));
  const linter = new ESLint({ cwd: dir, overrideConfigFile: true, overrideConfig: nestAppEslintConfig(dir) });
  const results = await linter.lintFiles([...byPath.keys()]);
  const messages: SnippetLintMessage[] = [];
  const linted: Snippet[] = [];
  for (const result of results) {
    const snippet = byPath.get(path.normalize(result.filePath));
    if (!snippet) throw new Error(`ESLint linted a file that is not a snippet: ${result.filePath}`);
    linted.push(snippet);
    for (const m of result.messages) {
      const severity = m.severity === 2 ? 'error' : 'warning';
      messages.push({
        snippet,
        // The snippet's line 1 is the line after the fence.
        where: `${snippet.file}:${snippet.line + m.line}:${m.column}`,
        ruleId: m.ruleId,
        severity,
        fixable: m.fix !== undefined,
        message: `${severity} ${m.ruleId ?? '(parsing)'}: ${m.message}`,
      });
    }
  }
  return { messages, linted };
}

/**
 * What a block must not draw: every message but the formatting `prettier/prettier` would fix. The Nest app's
 * `npm run lint` is `eslint --fix`, which reformats a pasted block to the app's `.prettierrc` (printWidth 80)
 * and fails only on what it cannot fix; the manual's blocks are formatted as this repository's code is, at
 * 110 columns. Stricter than `--fix` on the other rules: a block that only passes once ESLint rewrites it
 * (`prefer-const`, say) fails.
 */
export const lintFailures = (messages: readonly SnippetLintMessage[]) =>
  messages.filter((m) => !(m.ruleId === 'prettier/prettier' && m.fixable));

/** A report a reader can act on: each failing block (file and fence line), then its ESLint messages. */
export function formatLintReport(messages: readonly SnippetLintMessage[]): string {
  const blocks = new Map<Snippet, SnippetLintMessage[]>();
  for (const m of messages) blocks.set(m.snippet, [...(blocks.get(m.snippet) ?? []), m]);
  return [...blocks]
    .map(
      ([snippet, list]) =>
        `\`\`\`ts block at ${snippet.file}:${snippet.line} does not pass a fresh Nest app's ESLint config:\n` +
        list.map((m) => `  ${m.where}: ${m.message}`).join('\n'),
    )
    .join('\n\n');
}
