import { InvalidArgumentError, UnknownOptionError } from '../errors';
import * as messages from './option-object-messages';

/** An options object's name in messages and the keys it takes. */
export interface OptionsKind {
  /** The whole object, in messages: `'Redlock options'`, `'acquire options'`. */
  readonly name: string;
  /** One of its keys, in messages (and {@link UnknownOptionError}'s `what`): `'Redlock option'`. */
  readonly option: string;
  readonly known: ReadonlySet<string>;
  /** A call's options as an example, in messages (default `{ ttl: 5000 }`). */
  readonly example?: string;
}

/**
 * Keys that are never options and through which parsed JSON or a merge rewrites objects: copying
 * `{"__proto__": {...}}` replaces the copy's prototype, so its values are dropped or inherited unseen.
 */
const RESERVED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Reads an options object once (docs/DESIGN.md §11): its own enumerable keys, each value read once (a getter
 * runs once, so what is validated is what is used), `undefined` values left out (they mean "the default").
 * Refuses, naming the key and the fix: something that is not an object (or is an array); a reserved key
 * (`__proto__`, `constructor`, `prototype`); a key not in `kind.known` (with the nearest known one), own or
 * inherited; an option inherited from a prototype other than `Object.prototype` (it would be ignored); a
 * getter or Proxy trap that throws.
 */
export function readOptions(value: unknown, kind: OptionsKind): Record<string, unknown> {
  let keys: string[];
  try {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new InvalidArgumentError(messages.notAnOptionsObject(kind.name, value, kind.example));
    }
    keys = Object.keys(value);
    // Plain objects (the usual case) inherit nothing to look at: one prototype read decides.
    const proto = Object.getPrototypeOf(value) as object | null;
    const inherited =
      proto === Object.prototype || proto === null ? undefined : inheritedKey(proto, kind.known);
    if (inherited !== undefined && !kind.known.has(inherited)) {
      throw new UnknownOptionError(kind.option, inherited, kind.known);
    }
    if (inherited !== undefined) {
      throw new InvalidArgumentError(messages.inheritedOption(kind.option, inherited));
    }
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error;
    throw new InvalidArgumentError(messages.unreadableOptions(kind.name, error, kind.example));
  }
  // No prototype: a key left out reads undefined even when Object.prototype was polluted elsewhere.
  const read: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const key of keys) {
    if (RESERVED_KEYS.has(key)) throw new InvalidArgumentError(messages.reservedOptionKey(kind.option, key));
    if (!kind.known.has(key)) throw new UnknownOptionError(kind.option, key, kind.known);
    let field: unknown;
    try {
      field = (value as Record<string, unknown>)[key];
    } catch (error) {
      throw new InvalidArgumentError(messages.unreadableOption(kind.option, key, error));
    }
    if (field !== undefined) read[key] = field;
  }
  return read;
}

/**
 * A key an object inherits, from its prototype `first` on, that a reader of own keys would miss: any
 * enumerable one, or an option name (a class's getter), found on a prototype below `Object.prototype` (of any
 * realm: the one whose prototype is null). Plain objects have none, and class instances with their options as fields pass.
 */
function inheritedKey(first: object, known: ReadonlySet<string>): string | undefined {
  for (
    let proto: object | null = first;
    proto !== null && Object.getPrototypeOf(proto) !== null;
    proto = Object.getPrototypeOf(proto) as object | null
  ) {
    for (const key of Object.getOwnPropertyNames(proto)) {
      if (known.has(key) || Object.prototype.propertyIsEnumerable.call(proto, key)) return key;
    }
  }
  return undefined;
}
