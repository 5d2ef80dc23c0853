import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/**
 * Counts the real-time sleeps of the tests (issue "rooms three", part 6: tests on the virtual clock):
 * `node -r ts-node/register/transpile-only scripts/count-sleeps.ts [DIR]` (DIR defaults to test/) prints each
 * occurrence as `file:line  kind  text`, a total per file, per room (the first folder under DIR) and overall,
 * and exits 0.
 *
 * What counts, read from each file's syntax tree (comments and strings never count):
 * - `setTimeout`: every call of the global `setTimeout(...)` (also `globalThis.setTimeout`), be it a sleep, a
 *   deadline raced against a promise or a watchdog: each is a wait on the real clock;
 * - `setInterval`: every call of the global `setInterval(...)`, the same for a repeating timer;
 * - `timers/promises`: every call of `setTimeout` imported from 'timers/promises' or 'node:timers/promises'
 *   (under any local name), e.g. `import { setTimeout as sleep } from 'node:timers/promises'`;
 * - `sleep`: every call of a sleep helper, a function named `sleep` or `delay` whose definition waits on the
 *   real clock (a local one, or one imported, also under another name: helpers resolve by name across the
 *   scanned files);
 * - `poll`: every call of a real-time polling helper, a named function or method whose name says it waits
 *   (`eventually`, `wait...`, `until...`, `poll...`) and whose body loops around a real-time wait
 *   (`eventually`, `waitForNodeAge`, `waitForUptime`, `waitForPing`...: found, not listed), as a plain call
 *   `eventually(...)` or a method call `cluster.waitForUptime(...)`. Helpers resolve by name. A function that
 *   loops around a wait under another name (a node's `start` retrying a busy port, a chaos client's loop) is
 *   no polling helper: the waits in its body count where they are.
 * What does not count:
 * - the definitions of sleep and polling helpers: the waits inside their bodies are not sleeps, their call
 *   sites are;
 * - virtual and fake timers: a method `x.setTimeout(...)` on anything but the global object (a VirtualClock's,
 *   the simulation's scheduler's, a DriftingClock's), `jest.setTimeout` (a test's time limit), Jest's fake
 *   timers, and a `sleep`/`delay` whose definition waits only on such a clock;
 * - `setImmediate` waits (one turn of the event loop, not time), and `queueMicrotask`.
 */

export type SleepKind = 'setTimeout' | 'setInterval' | 'timers/promises' | 'sleep' | 'poll';

export interface Sleep {
  readonly file: string;
  readonly line: number;
  readonly kind: SleepKind;
  readonly text: string;
}

const SLEEP_NAMES = new Set(['sleep', 'delay']);
const POLL_NAME = /^(eventually|wait|until|poll)/i;
const TIMERS_PROMISES = new Set(['timers/promises', 'node:timers/promises']);

function walk(dir: string): string[] {
  const files: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...walk(full));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(full);
  }
  return files.sort();
}

const parse = (file: string) =>
  ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);

/** Local names bound to `setTimeout` of timers/promises in `source`. */
function timersPromisesNames(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    if (!TIMERS_PROMISES.has(statement.moduleSpecifier.text)) continue;
    const bindings = statement.importClause?.namedBindings;
    if (!bindings || !ts.isNamedImports(bindings)) continue;
    for (const element of bindings.elements) {
      if ((element.propertyName ?? element.name).text === 'setTimeout') names.add(element.name.text);
    }
  }
  return names;
}

/** Local names of imports renamed on the way in (`import { delay as sleep }`: sleep → delay). */
function importAliases(source: ts.SourceFile): Map<string, string> {
  const aliases = new Map<string, string>();
  for (const statement of source.statements) {
    const bindings = ts.isImportDeclaration(statement) ? statement.importClause?.namedBindings : undefined;
    if (!bindings || !ts.isNamedImports(bindings)) continue;
    for (const element of bindings.elements) {
      if (element.propertyName) aliases.set(element.name.text, element.propertyName.text);
    }
  }
  return aliases;
}

/** A named function-like definition: a function declaration, a const bound to a function, a method. */
function definitionOf(node: ts.Node): { name: string; body: ts.Node } | undefined {
  if (ts.isFunctionDeclaration(node) && node.name && node.body)
    return { name: node.name.text, body: node.body };
  if (ts.isMethodDeclaration(node) && node.body && ts.isIdentifier(node.name)) {
    return { name: node.name.text, body: node.body };
  }
  if (
    ts.isVariableDeclaration(node) &&
    ts.isIdentifier(node.name) &&
    node.initializer &&
    (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer))
  ) {
    return { name: node.name.text, body: node.initializer.body };
  }
  return undefined;
}

const isLoop = (node: ts.Node) =>
  ts.isForStatement(node) || ts.isWhileStatement(node) || ts.isDoStatement(node) || ts.isForOfStatement(node);

interface Helpers {
  /** Sleep helpers by name: true when one definition of that name waits on the real clock. */
  readonly sleeps: Map<string, boolean>;
  /** Names of polling helpers. */
  readonly polls: Set<string>;
}

/** The real-time wait a call is, if any, before helpers are known to be sleeps or polls. */
function primitiveKind(call: ts.CallExpression, timers: Set<string>): SleepKind | undefined {
  const callee = call.expression;
  if (ts.isIdentifier(callee)) {
    if (timers.has(callee.text)) return 'timers/promises';
    if (callee.text === 'setTimeout') return 'setTimeout';
    if (callee.text === 'setInterval') return 'setInterval';
  }
  if (
    ts.isPropertyAccessExpression(callee) &&
    ts.isIdentifier(callee.expression) &&
    (callee.expression.text === 'globalThis' || callee.expression.text === 'global') &&
    (callee.name.text === 'setTimeout' || callee.name.text === 'setInterval')
  ) {
    return callee.name.text;
  }
  return undefined;
}

function calleeName(call: ts.CallExpression): { name: string; method: boolean } | undefined {
  const callee = call.expression;
  if (ts.isIdentifier(callee)) return { name: callee.text, method: false };
  if (ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.name)) {
    return { name: callee.name.text, method: true };
  }
  return undefined;
}

/** Whether `body` waits on the real clock: a primitive wait or a call of a known real sleep helper. */
function waitsOnRealClock(body: ts.Node, timers: Set<string>, sleeps: Map<string, boolean>): boolean {
  let found = false;
  const visit = (node: ts.Node) => {
    if (found) return;
    if (ts.isCallExpression(node)) {
      const callee = calleeName(node);
      if (primitiveKind(node, timers) || (callee && !callee.method && sleeps.get(callee.name))) found = true;
    }
    ts.forEachChild(node, visit);
  };
  visit(body);
  return found;
}

/** Whether `body` has a loop around a real-time wait. */
function pollsOnRealClock(body: ts.Node, timers: Set<string>, sleeps: Map<string, boolean>): boolean {
  let found = false;
  const visit = (node: ts.Node) => {
    if (found) return;
    if (isLoop(node) && waitsOnRealClock(node, timers, sleeps)) found = true;
    else ts.forEachChild(node, visit);
  };
  visit(body);
  return found;
}

function forEachDefinition(source: ts.SourceFile, fn: (name: string, body: ts.Node) => void): void {
  const visit = (node: ts.Node) => {
    const definition = definitionOf(node);
    if (definition) fn(definition.name, definition.body);
    ts.forEachChild(node, visit);
  };
  visit(source);
}

/** Finds the sleep and polling helpers defined in `files` (sleep helpers first: polls are loops over them). */
function findHelpers(sources: ts.SourceFile[]): Helpers {
  const sleeps = new Map<string, boolean>();
  for (const source of sources) {
    const timers = timersPromisesNames(source);
    forEachDefinition(source, (name, body) => {
      if (!SLEEP_NAMES.has(name)) return;
      sleeps.set(name, (sleeps.get(name) ?? false) || waitsOnRealClock(body, timers, new Map()));
    });
  }
  const polls = new Set<string>();
  for (const source of sources) {
    const timers = timersPromisesNames(source);
    // A sleep helper imported under another name (`delay as sleep`) waits as the helper it is.
    const local = new Map(sleeps);
    for (const [alias, imported] of importAliases(source)) {
      if (!timers.has(alias) && sleeps.has(imported)) local.set(alias, sleeps.get(imported)!);
    }
    forEachDefinition(source, (name, body) => {
      if (POLL_NAME.test(name) && pollsOnRealClock(body, timers, local)) polls.add(name);
    });
  }
  return { sleeps, polls };
}

/** The real-time sleeps of one file, given the helpers of all files. */
function sleepsIn(source: ts.SourceFile, helpers: Helpers, root: string): Sleep[] {
  const timers = timersPromisesNames(source);
  // A sleep helper defined in this file decides for this file (the simulation's `sleep` is virtual).
  const sleeps = new Map(helpers.sleeps);
  const polls = new Set(helpers.polls);
  forEachDefinition(source, (name, body) => {
    if (SLEEP_NAMES.has(name)) sleeps.set(name, waitsOnRealClock(body, timers, new Map()));
  });
  for (const [local, imported] of importAliases(source)) {
    if (!timers.has(local)) sleeps.set(local, helpers.sleeps.get(imported) ?? false);
    if (helpers.polls.has(imported)) polls.add(local);
  }
  const found: Sleep[] = [];
  const file = path.relative(root, source.fileName);
  const visit = (node: ts.Node, inHelper: boolean) => {
    const definition = definitionOf(node);
    const helperBody =
      definition !== undefined && (SLEEP_NAMES.has(definition.name) || helpers.polls.has(definition.name));
    if (ts.isCallExpression(node) && !inHelper) {
      const callee = calleeName(node);
      let kind = primitiveKind(node, timers);
      if (!kind && callee && !callee.method && sleeps.get(callee.name)) kind = 'sleep';
      if (!kind && callee && polls.has(callee.name)) kind = 'poll';
      if (kind) {
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        const text = node.getText(source).split('\n')[0].slice(0, 80);
        found.push({ file, line, kind, text });
      }
    }
    ts.forEachChild(node, (child) => visit(child, inHelper || helperBody));
  };
  visit(source, false);
  return found;
}

/** Every real-time sleep of the `.ts` files under `dir`, in file and line order. */
export function countSleeps(dir: string, root = process.cwd()): Sleep[] {
  const sources = walk(dir).map(parse);
  const helpers = findHelpers(sources);
  return sources.flatMap((source) => sleepsIn(source, helpers, root));
}

function main(): void {
  const root = path.resolve(__dirname, '..');
  const dir = path.resolve(root, process.argv[2] ?? 'test');
  const sleeps = countSleeps(dir, root);
  const perFile = new Map<string, number>();
  const perRoom = new Map<string, number>();
  for (const sleep of sleeps) {
    console.log(`${sleep.file}:${sleep.line}  ${sleep.kind}  ${sleep.text}`);
    perFile.set(sleep.file, (perFile.get(sleep.file) ?? 0) + 1);
    const room = path.relative(dir, path.resolve(root, sleep.file)).split(path.sep);
    const roomName = room.length > 1 ? room[0] : '.';
    perRoom.set(roomName, (perRoom.get(roomName) ?? 0) + 1);
  }
  console.log('\nPer file:');
  for (const [file, n] of [...perFile].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))) {
    console.log(`${String(n).padStart(4)}  ${file}`);
  }
  console.log('\nPer room:');
  for (const [room, n] of [...perRoom].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))) {
    console.log(`${String(n).padStart(4)}  ${room}`);
  }
  console.log(`\nTotal: ${sleeps.length} real-time sleeps in ${perFile.size} files`);
}

if (require.main === module) main();
