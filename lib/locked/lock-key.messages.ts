/**
 * Message factories for lock key compilation and rendering (see `lock-key.ts`).
 *
 * Every message names the decorated method (`where`, e.g. `OrdersService.pay`), the template or
 * placeholder involved, what was found and what to do. Kept apart from the logic so the wording can
 * be reviewed in one place.
 *
 * @internal
 */

/** Shows a template with a caret under `position` (0-based, in UTF-16 code units). */
function pointAt(template: string, position: number): string {
  return `\n  ${template}\n  ${' '.repeat(position)}^`;
}

/** `1 argument` / `2 arguments`. */
function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** A syntax error in a template, at a position. */
export function templateSyntax(where: string, template: string, position: number, problem: string): string {
  return (
    `Invalid lock key template '${template}' for ${where}: ${problem} at position ${position}.` +
    pointAt(template, position) +
    `\nPlaceholders are <N> or <N.path.to.prop> (N = argument index); write << and >> for literal < and >.`
  );
}

/** Two placeholders with nothing, or an unsafe character, between them. */
export function unsafeSeparator(
  where: string,
  template: string,
  position: number,
  before: string,
  after: string,
  found: string | undefined,
): string {
  const what = found === undefined ? 'nothing' : `'${found}'`;
  return (
    `Invalid lock key template '${template}' for ${where}: ${before} and ${after} are separated by ${what} ` +
    `at position ${position}; the text between two placeholders must start with an ASCII punctuation ` +
    `character other than '%' (such as ':', '/', '-' or '|'), otherwise two different values can render ` +
    `the same key (for example 'ab' + 'c' and 'a' + 'bc').` +
    pointAt(template, position)
  );
}

/** A placeholder reads an argument the method does not declare. */
export function indexPastParams(
  where: string,
  template: string,
  placeholder: string,
  index: number,
  declared: number,
): string {
  return (
    `Invalid lock key template '${template}' for ${where}: ${placeholder} reads argument ${index}, but ${where} declares ${plural(declared, 'parameter')} ` +
    `(indexes start at 0). If that argument follows a default or rest parameter (Function.length stops ` +
    `counting there), use a key function instead: @Locked((...args) => ...).`
  );
}

/** A key source that is not a string, an array of strings, or a function. */
export function badSource(where: string, found: string): string {
  return (
    `Invalid lock key for ${where}: expected a template string, an array of template strings or a ` +
    `function (...args) => string | string[], got ${found}.`
  );
}

/** The empty template or the empty array of templates. */
export function emptySource(where: string, what: 'template' | 'array'): string {
  return what === 'template'
    ? `Invalid lock key template for ${where}: the template is empty; use a constant like 'report:nightly' or a placeholder like 'order:<0>'.`
    : `Invalid lock key for ${where}: the array of templates is empty; give at least one template.`;
}

/** The same template twice in an array. */
export function duplicateTemplate(where: string, template: string): string {
  return `Invalid lock key for ${where}: the template '${template}' appears twice in the array; each template must name a different resource.`;
}

/** A key longer than the limit (after rendering, or already in the literal text). */
export function keyTooLong(where: string, length: number, limit: number, origin: string): string {
  return (
    `Lock key for ${where} is ${length} characters long (${origin}); the limit is ${limit}. ` +
    `Lock on a short identifier (e.g. <0.id>) rather than on a whole value.`
  );
}

/** The rendered key is the empty string. */
export function emptyKey(where: string, template: string): string {
  return `Cannot build the lock key for ${where}: template '${template}' rendered an empty key; every placeholder value was empty.`;
}

/** The argument a placeholder reads is missing. */
export function missingArgument(
  where: string,
  placeholder: string,
  index: number,
  value: unknown,
  argCount: number,
): string {
  return (
    `Cannot build the lock key for ${where}: ${placeholder} needs argument ${index}, which is ${String(value)} ` +
    `(${where} was called with ${plural(argCount, 'argument')}).`
  );
}

/** A property path ran into undefined/null before segment `at`. */
export function brokenPath(
  where: string,
  placeholder: string,
  index: number,
  path: readonly string[],
  at: number,
  value: unknown,
): string {
  const reached = `<${[String(index), ...path.slice(0, at)].join('.')}>`;
  return `Cannot build the lock key for ${where}: ${placeholder} cannot read '${path[at]}' because ${reached} is ${String(value)}.`;
}

/** The placeholder resolved to something that is not a string, finite number, bigint or boolean. */
export function badLeaf(
  where: string,
  placeholder: string,
  index: number,
  path: readonly string[],
  value: unknown,
): string {
  const prefix = `Cannot build the lock key for ${where}: ${placeholder}`;
  if (value === undefined || value === null) {
    return `${prefix} is ${String(value)}; pass a value or use a key function.`;
  }
  if (typeof value === 'number') {
    return `${prefix} is ${String(value)}; only finite numbers can be part of a lock key.`;
  }
  const kind = Array.isArray(value)
    ? 'an array'
    : typeof value === 'object'
      ? 'an object'
      : `a ${typeof value}`;
  const example = `<${[String(index), ...path, 'id'].join('.')}>`;
  return (
    `${prefix} is ${kind}; use a property path like ${example} or a key function ` +
    `(only strings, finite numbers, bigints and booleans can be part of a lock key).`
  );
}

/** Two templates of one lock rendered the same key. */
export function duplicateKey(where: string, key: string, first: string, second: string): string {
  return (
    `Cannot build the lock key for ${where}: templates '${first}' and '${second}' both rendered '${key}'; ` +
    `one lock cannot hold the same resource twice (check the arguments, or use a key function that de-duplicates).`
  );
}

/** A key function returned something that is not a usable key. */
export function badFunctionResult(where: string, problem: string): string {
  return (
    `The lock key function for ${where} ${problem}; it must return a non-empty string or a non-empty ` +
    `array of distinct non-empty strings.`
  );
}

/** Short description of an unexpected value (never its full contents); a Promise is called out. */
export function describeKeyValue(value: unknown): string {
  if (value === undefined || value === null) return String(value);
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') {
    return `the string '${value.length > 40 ? value.slice(0, 40) + '…' : value}'`;
  }
  if (typeof (value as { then?: unknown }).then === 'function') {
    return 'a Promise (key functions must be synchronous)';
  }
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'function') return 'a function';
  return `a ${typeof value} (${String(value)})`;
}
