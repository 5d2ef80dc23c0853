/** The messages of reading an options object ({@link readOptions}'s refusals). */
import { describe, errorText } from '../messages';

/** An options argument that is not an object (or is an array). */
export function notAnOptionsObject(name: string, value: unknown, example = '{ ttl: 5000 }'): string {
  return `${name} must be an object like ${example}, got ${describe(value)}.`;
}

/** `__proto__`, `constructor` or `prototype` as an option key (from JSON, or a merge of configuration). */
export function reservedOptionKey(what: string, key: string): string {
  const why =
    key === '__proto__'
      ? 'copying the options would make its value their prototype instead, so what it holds would be dropped ' +
        'silently or inherited where nobody sees it'
      : 'it is one of the keys (__proto__, constructor, prototype) through which parsed JSON rewrites objects';
  return (
    `${what} key "${key}" is refused: it is not an option, and ${why}. It usually comes from a JSON file or ` +
    `merged configuration: remove "${key}" there and give the options as plain keys ({ "ttl": 5000 }).`
  );
}

/** An option found on the options object's prototype: options are read from its own properties only. */
export function inheritedOption(what: string, key: string): string {
  return (
    `${what} "${key}" is inherited from the prototype of the object passed (made with { __proto__: ... }, ` +
    `Object.create() or a class getter), and options are read from the object's own properties only, so it ` +
    `would be ignored. Put it on the object itself: { ...options, ${key}: value }.`
  );
}

/** Listing an options object's keys threw (a Proxy trap). */
export function unreadableOptions(name: string, error: unknown, example = '{ ttl: 5000 }'): string {
  return (
    `${name} could not be read: listing its keys threw (${errorText(error)}), as a Proxy's trap may. Pass a ` +
    `plain object of values: ${example}.`
  );
}

/** Reading one option threw (a getter or a Proxy trap). */
export function unreadableOption(what: string, key: string, error: unknown): string {
  return (
    `${what} "${key}" could not be read: its getter (or a Proxy trap) threw (${errorText(error)}). Options ` +
    `are read once, as values: pass { ${key}: value }.`
  );
}
