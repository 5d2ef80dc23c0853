/**
 * Lock key templates for `@Locked`: compiled once when the class is defined, rendered on every call.
 *
 * ## Template syntax
 * - `<N>` is argument `N` (0-based, no leading zeros): `'order:<0>'`.
 * - `<N.a.b>` reads a property path from argument `N`: `'tenant:<1.tenant.id>'`. Segments are
 *   identifiers (`[A-Za-z_$][A-Za-z0-9_$]*`); `__proto__`, `constructor` and `prototype` are refused.
 * - `<<` and `>>` are a literal `<` and `>`; any other `<`/`>` is a compile error.
 * - Everything else is literal text, including `{...}` (your own Redis Cluster hash tag).
 * - A template without placeholders is a constant key (`'report:nightly'`).
 * - Two placeholders must be separated by literal text that starts with an ASCII punctuation
 *   character other than `%` (`'<0>:<1>'`, `'<0>/<1>'`; not `'<0><1>'` nor `'<0>x<1>'`).
 *
 * ## Values and escaping (the injectivity rule)
 * A placeholder must resolve to a string, a finite number, a bigint or a boolean; its *text* is the
 * string itself or `String(value)` (`42`, `42n` and `'42'` all give `42`, so `pay('42')` from HTTP and
 * `pay(42)` from a cron take the same lock — they name the same resource). `undefined`, `null`, NaN,
 * ±Infinity, objects, arrays, symbols and functions are refused with an error naming the method and
 * the placeholder: a key never contains `undefined` or `[object Object]`. The text is then
 * percent-encoded (`%` + two uppercase hex digits) for `%`, `:`, `{`, `}` and for the first character
 * of every literal that follows a placeholder, e.g. `-` in `'<0>-<1>'`; everything else is kept, so
 * `'order:<0>'` with `'42'` renders `order:42` and with `'a:b'` renders `order:a%3Ab`.
 *
 * Why this is injective — for one template, distinct tuples of placeholder texts give distinct keys:
 * the key is `L0 e(v1) L1 e(v2) … Ln`, the literals `Li` fixed. The encoding `e` escapes `%`, so it is
 * uniquely decodable (a `%` always starts an escape). Each `Li` between two placeholders starts with a
 * character `c` that `e` escapes and never emits (`c` is neither `%` nor a hex digit). Reading a key
 * left to right: strip `L0`; `e(v1)` runs up to the first `c` of `L1`; strip `L1`; and so on; the
 * last value is what remains before the known suffix `Ln`. So every `e(vi)`, hence every text, is
 * recovered from the key. Escaping `:` everywhere also keeps a value from posing as a deeper key
 * segment, and escaping braces keeps a value from creating a Redis Cluster hash tag.
 *
 * Keys longer than 1024 characters (UTF-16 code units, after escaping) are refused. Keys returned by a
 * key function are used as they are (validated, not escaped): their injectivity is theirs to keep.
 *
 * Pure module: nothing from `@nestjs/*` or `ioredis`.
 */
import { RedlockError } from '../core';
import * as messages from './lock-key.messages';

/** Where the key comes from: a template, an array of templates, or a function of the method's arguments. */
export type LockKeySource = string | readonly string[] | ((...args: any[]) => string | readonly string[]);

/** A compiled key source: call render(args) per invocation. */
export interface CompiledLockKey {
  /**
   * Renders the keys for one call: one key per template, in template order (or the key function's
   * result, validated). Returns a fresh array. Throws {@link InvalidLockKeyError} when an argument
   * cannot be part of a key or two templates render the same key; a key function's own errors
   * propagate unchanged.
   */
  render(args: readonly unknown[]): string[];
  /** The templates, frozen, in order (one template: a one-element array); `undefined` for a key function. */
  readonly templates: readonly string[] | undefined;
}

/**
 * A lock key source is malformed (at compile time) or cannot be rendered from a call's arguments. A
 * {@link RedlockError}, so `instanceof RedlockError` catches it with the library's other errors.
 */
export class InvalidLockKeyError extends RedlockError {
  /** @param message what happened, which method, which template or placeholder, and what to do */
  constructor(message: string) {
    super(message);
  }
}

function invalid(message: string): InvalidLockKeyError {
  return new InvalidLockKeyError(message);
}

/** Longest key, in UTF-16 code units after escaping. Redis allows far more; a lock key this long is a bug. */
const MAX_KEY_LENGTH = 1024;
const FORBIDDEN_SEGMENTS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
/** Always escaped in values: the escape itself, the usual key separator, hash-tag braces. */
const BASE_ESCAPES = '%:{}';
/** `%XX` for every ASCII code, built once. */
const ESCAPED: readonly string[] = Array.from(
  { length: 128 },
  (_, c) => '%' + c.toString(16).toUpperCase().padStart(2, '0'),
);
const BASE_TABLE = escapeTable('');

/** One placeholder: argument index, property path, and its source text for messages. */
interface Placeholder {
  readonly index: number;
  readonly path: readonly string[];
  readonly text: string;
}

/** A parsed template: literals[0] p[0] literals[1] … literals[n]; `escape` marks ASCII codes to encode. */
interface ParsedTemplate {
  readonly template: string;
  readonly literals: readonly string[];
  readonly placeholders: readonly Placeholder[];
  readonly escape: Uint8Array;
}

/**
 * Compile once at decoration time.
 *
 * @param source a template (`'order:<0>'`), an array of templates (one key each, for a multi-resource
 *   lock), or a function of the method's arguments returning a key or an array of keys.
 * @param where the method, e.g. `'OrdersService.pay'`, used in every message.
 * @param declaredParams the number of declared parameters (`method.length`), or `undefined` when
 *   unknown. When given, a placeholder index ≥ `declaredParams` is a compile error. Note that
 *   `Function.length` stops at the first default or rest parameter: such arguments need a key function.
 * @throws InvalidLockKeyError for an empty or malformed template (the message names the template and
 *   the position), an index past the declared parameters, an empty or duplicated array entry.
 */
export function compileLockKey(
  source: LockKeySource,
  where: string,
  declaredParams?: number,
): CompiledLockKey {
  if (declaredParams !== undefined && !(Number.isSafeInteger(declaredParams) && declaredParams >= 0)) {
    throw new TypeError(
      `compileLockKey(${where}): declaredParams must be a non-negative integer or undefined.`,
    );
  }
  if (typeof source === 'function') return compileFunction(source, where);
  if (typeof source === 'string') {
    const parsed = parseTemplate(source, where, declaredParams);
    const templates = Object.freeze([source]);
    return Object.freeze({
      templates,
      render: (args: readonly unknown[]) => [renderTemplate(parsed, args, where)],
    });
  }
  if (!Array.isArray(source)) throw invalid(messages.badSource(where, messages.describeKeyValue(source)));
  const list = source as readonly unknown[];
  if (list.length === 0) throw invalid(messages.emptySource(where, 'array'));
  const parsed: ParsedTemplate[] = [];
  for (const template of list) {
    if (typeof template !== 'string') {
      throw invalid(messages.badSource(where, `an array containing ${messages.describeKeyValue(template)}`));
    }
    if (parsed.some((p) => p.template === template)) {
      throw invalid(messages.duplicateTemplate(where, template));
    }
    parsed.push(parseTemplate(template, where, declaredParams));
  }
  const templates = Object.freeze(parsed.map((p) => p.template));
  return Object.freeze({ templates, render: (args: readonly unknown[]) => renderAll(parsed, args, where) });
}

function compileFunction(fn: (...args: any[]) => string | readonly string[], where: string): CompiledLockKey {
  const bad = (problem: string) => invalid(messages.badFunctionResult(where, problem));
  /** Validates one returned key; `index` is its position in a returned array, or -1. */
  const check = (key: unknown, index: number): string => {
    if (typeof key === 'string' && key.length > 0 && key.length <= MAX_KEY_LENGTH) return key;
    const at = index < 0 ? '' : ` at index ${index}`;
    if (typeof key !== 'string') throw bad(`returned ${messages.describeKeyValue(key)}${at}`);
    if (key.length === 0) throw bad(`returned an empty string${at}`);
    throw invalid(messages.keyTooLong(where, key.length, MAX_KEY_LENGTH, `key function${at}`));
  };
  const render = (args: readonly unknown[]): string[] => {
    const result: unknown = fn(...args);
    if (!Array.isArray(result)) return [check(result, -1)];
    if (result.length === 0) throw bad('returned an empty array');
    const keys = new Array<string>(result.length);
    for (let i = 0; i < result.length; i++) {
      keys[i] = check(result[i], i);
      const j = keys.indexOf(keys[i]);
      if (j < i) throw bad(`returned '${keys[i]}' twice (at indexes ${j} and ${i})`);
    }
    return keys;
  };
  return Object.freeze({ templates: undefined, render });
}

// ---------------------------------------------------------------------------------------------- parse

function parseTemplate(template: string, where: string, declaredParams: number | undefined): ParsedTemplate {
  if (template.length === 0) throw invalid(messages.emptySource(where, 'template'));
  const fail = (position: number, problem: string): never => {
    throw invalid(messages.templateSyntax(where, template, position, problem));
  };
  const literals: string[] = [];
  const placeholders: Placeholder[] = [];
  let separators = '';
  let literal = '';
  let literalStart = 0;
  let i = 0;
  const n = template.length;
  while (i < n) {
    const ch = template[i];
    if ((ch === '<' || ch === '>') && template[i + 1] === ch) {
      literal += ch; // << and >> are a literal < and >
      i += 2;
      continue;
    }
    if (ch === '>') fail(i, "stray '>' (write '>>' for a literal '>')");
    if (ch !== '<') {
      literal += ch;
      i++;
      continue;
    }
    const { index, path, text, end } = readPlaceholder(template, i, fail);
    i = end;
    if (declaredParams !== undefined && index >= declaredParams) {
      throw invalid(messages.indexPastParams(where, template, text, index, declaredParams));
    }
    if (placeholders.length > 0) {
      // The literal between two placeholders must start with a character the encoding never emits.
      const first = literal.length > 0 ? literal.charCodeAt(0) : -1;
      if (!isSeparator(first)) {
        const before = placeholders[placeholders.length - 1].text;
        const found = first === -1 ? undefined : literal[0];
        throw invalid(messages.unsafeSeparator(where, template, literalStart, before, text, found));
      }
      separators += literal[0];
    }
    literals.push(literal);
    placeholders.push({ index, path, text });
    literal = '';
    literalStart = i;
  }
  literals.push(literal);
  const literalLength = literals.reduce((sum, l) => sum + l.length, 0);
  if (literalLength > MAX_KEY_LENGTH) {
    throw invalid(messages.keyTooLong(where, literalLength, MAX_KEY_LENGTH, `template '${template}'`));
  }
  const escape = separators === '' ? BASE_TABLE : escapeTable(separators);
  return { template, literals, placeholders, escape };
}

/**
 * Reads the placeholder that starts at `start` (its '<'): `<index>` or `<index.path.to.property>`. Returns it
 * and the position after its '>'; `fail` throws a syntax error at a position.
 */
function readPlaceholder(
  template: string,
  start: number,
  fail: (position: number, problem: string) => never,
): Placeholder & { end: number } {
  const n = template.length;
  let i = start + 1;
  const digitsStart = i;
  while (i < n && isDigit(template.charCodeAt(i))) i++;
  if (i === digitsStart) fail(i, "expected an argument index (0, 1, 2, ...) after '<'");
  if (i - digitsStart > 1 && template[digitsStart] === '0')
    fail(digitsStart, 'argument index has a leading zero');
  const index = Number(template.slice(digitsStart, i));
  if (!Number.isSafeInteger(index)) fail(digitsStart, 'argument index is too large');
  const path: string[] = [];
  while (template[i] === '.') {
    const segmentStart = ++i;
    if (i < n && isIdentifierStart(template.charCodeAt(i))) {
      i++;
      while (i < n && isIdentifierPart(template.charCodeAt(i))) i++;
    }
    if (i === segmentStart) fail(i, "expected a property name (letters, digits, '_' or '$') after '.'");
    const segment = template.slice(segmentStart, i);
    if (FORBIDDEN_SEGMENTS.has(segment)) fail(segmentStart, `'${segment}' is not allowed in a property path`);
    path.push(segment);
  }
  if (i >= n) fail(start, "unclosed placeholder (expected '>')");
  if (template[i] !== '>')
    fail(i, path.length === 0 ? "expected a digit, '.' or '>'" : "expected '.' or '>'");
  const end = i + 1;
  return { index, path, text: template.slice(start, end), end };
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isIdentifierStart(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 /* _ */ || c === 36; /* $ */
}

function isIdentifierPart(c: number): boolean {
  return isIdentifierStart(c) || isDigit(c);
}

/** ASCII punctuation but `%`: once escaped it cannot appear in an encoded value (escapes are %, 0-9, A-F). */
function isSeparator(c: number): boolean {
  const punctuation =
    (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  return punctuation && c !== 37;
}

function escapeTable(extra: string): Uint8Array {
  const table = new Uint8Array(128);
  for (const ch of BASE_ESCAPES + extra) table[ch.charCodeAt(0)] = 1;
  return table;
}

// --------------------------------------------------------------------------------------------- render

function renderAll(parsed: readonly ParsedTemplate[], args: readonly unknown[], where: string): string[] {
  const keys = new Array<string>(parsed.length);
  for (let i = 0; i < parsed.length; i++) {
    const key = renderTemplate(parsed[i], args, where);
    for (let j = 0; j < i; j++) {
      if (keys[j] === key) {
        throw invalid(messages.duplicateKey(where, key, parsed[j].template, parsed[i].template));
      }
    }
    keys[i] = key;
  }
  return keys;
}

function renderTemplate(t: ParsedTemplate, args: readonly unknown[], where: string): string {
  const { literals, placeholders } = t;
  if (placeholders.length === 0) return literals[0];
  let key = literals[0];
  for (let k = 0; k < placeholders.length; k++) {
    key += encode(t.escape, valueText(placeholders[k], args, where)) + literals[k + 1];
  }
  if (key.length === 0) throw invalid(messages.emptyKey(where, t.template));
  if (key.length > MAX_KEY_LENGTH) {
    throw invalid(messages.keyTooLong(where, key.length, MAX_KEY_LENGTH, `rendered from '${t.template}'`));
  }
  return key;
}

/** Resolves a placeholder to the text of its value, or throws naming the placeholder and what was found. */
function valueText(p: Placeholder, args: readonly unknown[], where: string): string {
  let value = args[p.index];
  if (value === undefined || value === null) {
    throw invalid(messages.missingArgument(where, p.text, p.index, value, args.length));
  }
  const path = p.path;
  for (let s = 0; s < path.length; s++) {
    if (value === undefined || value === null) {
      throw invalid(messages.brokenPath(where, p.text, p.index, path, s, value));
    }
    value = (value as Record<string, unknown>)[path[s]];
  }
  const type = typeof value;
  if (type === 'string') return value as string;
  if (type === 'number' ? Number.isFinite(value) : type === 'bigint' || type === 'boolean')
    return String(value);
  throw invalid(messages.badLeaf(where, p.text, p.index, path, value));
}

/** Percent-encodes the ASCII characters marked in `table`; returns `text` itself when nothing needs it. */
function encode(table: Uint8Array, text: string): string {
  let out: string | undefined;
  let last = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 128 && table[c] === 1) {
      out = (out === undefined ? '' : out) + text.slice(last, i) + ESCAPED[c];
      last = i + 1;
    }
  }
  return out === undefined ? text : out + text.slice(last);
}
