import { InvalidArgumentError } from './errors';
import { describe, formatResources, hashTagEscape, notWellFormed } from './messages';

/**
 * Validates what the caller wants to lock and returns it as a list: one resource or a non-empty list of
 * distinct, non-empty strings, each well-formed Unicode and not starting with `}` (see {@link lockKey}).
 */
export function normalizeResources(resources: unknown): string[] {
  if (typeof resources === 'string' && resources.length > 0) {
    checkEncodable(resources);
    return [resources]; // the common case
  }
  const list = typeof resources === 'string' ? [resources] : copyOfList(resources);
  if (list.length === 0) {
    throw new InvalidArgumentError('resources must not be empty: name at least one resource to lock.');
  }
  const seen = new Set<string>();
  for (const resource of list) {
    if (typeof resource !== 'string' || resource.length === 0) {
      throw new InvalidArgumentError(
        `every resource must be a non-empty string, got ${describe(resource)} in ${describeList(list)}.`,
      );
    }
    checkEncodable(resource);
    if (seen.has(resource)) {
      throw new InvalidArgumentError(
        `resource ${formatResources([resource])} is listed twice; list each resource once.`,
      );
    }
    seen.add(resource);
  }
  return list as string[];
}

/**
 * The caller's array, copied with each element read once: what is checked is what is locked (a getter cannot
 * answer differently later), and the lock keeps its own list. A revoked Proxy or a throwing trap is refused.
 */
function copyOfList(resources: unknown): unknown[] {
  let isArray: boolean;
  try {
    isArray = Array.isArray(resources);
  } catch {
    isArray = false; // a revoked Proxy
  }
  if (!isArray) {
    throw new InvalidArgumentError(
      `resources must be a string or an array of strings, got ${describe(resources)}. Example: 'order:42'.`,
    );
  }
  try {
    return Array.prototype.slice.call(resources as unknown[]);
  } catch (error) {
    throw new InvalidArgumentError(
      `resources could not be read: reading it threw (${error instanceof Error ? `${error.name}: ${error.message}` : 'a non-Error'}), ` +
        'as a getter or Proxy trap may. Pass a plain array of strings.',
    );
  }
}

/** A list of resources that may hold anything, for a message: short. */
function describeList(list: readonly unknown[]): string {
  return list.every((item) => typeof item === 'string')
    ? formatResources(list as string[])
    : `a list of ${list.length}`;
}

/**
 * Refuses what would break the key mapping's injectivity or its hash tag:
 * - a lone UTF-16 surrogate reaches Redis as U+FFFD (`'\uD800'` and `'\uDBFF'` would share one key);
 * - a leading `}` closes the hash tag at once (`{}x}`), and an empty tag makes Redis Cluster hash the whole
 *   key, so the lock and fence keys would land in different slots.
 */
function checkEncodable(resource: string): void {
  const lone = loneSurrogateAt(resource);
  if (lone >= 0) throw new InvalidArgumentError(notWellFormed(resource, lone));
  if (resource.charCodeAt(0) === 0x7d) throw new InvalidArgumentError(hashTagEscape(resource));
}

const nativeIsWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

/** The index of the first lone surrogate in `text`, or −1 when it is well-formed Unicode. */
function loneSurrogateAt(text: string): number {
  // isWellFormed (Node 20+) is the fast check; the scan below only runs for the rare bad string, or on Node 18.
  if (nativeIsWellFormed?.call(text) === true) return -1;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0xd800 || unit > 0xdfff) continue;
    const next = text.charCodeAt(i + 1);
    if (unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++;
    else return i;
  }
  return -1;
}

/**
 * The Redis key of a resource's lock: `<prefix>{<resource>}`. The braces make the resource a Redis Cluster
 * hash tag, so every key the library keeps about one resource lands in the same slot (resources starting
 * with `}` are refused: they would end the tag empty). Distinct resources always give distinct keys, also
 * as bytes: the mapping is prefix + fixed wrapping, and resources are well-formed Unicode.
 */
export function lockKey(prefix: string, resource: string): string {
  return `${prefix}{${resource}}`;
}

/**
 * The Redis key of a resource's fence counter: `<prefix>{<resource>}:fence`. Same hash tag as the lock key
 * (same Redis Cluster slot); it can never equal a lock key, since lock keys end in `}`.
 */
export function fenceKey(prefix: string, resource: string): string {
  return `${prefix}{${resource}}:fence`;
}

/** The readers set of a resource (read-write locks): `<lock key>:readers`; same hash tag, never a lock key. */
export function readersKey(lockKeyOfResource: string): string {
  return `${lockKeyOfResource}:readers`;
}

/** The writer-intent key of a resource: `<lock key>:intent`; same hash tag, never a lock key. */
export function intentKey(lockKeyOfResource: string): string {
  return `${lockKeyOfResource}:intent`;
}

/**
 * The fair-waiting keys of a lock (docs/DESIGN.md §18): each resource's queue `<lock key>:queue`, then each one's
 * ticket expiries `:queue:live`, then each one's turn marker `:queue:turn`; same hash tag, never a lock key.
 */
export function queueKeysOf(lockKeys: readonly string[]): string[] {
  const queues = lockKeys.map((key) => `${key}:queue`);
  return [...queues, ...queues.map((key) => `${key}:live`), ...queues.map((key) => `${key}:turn`)];
}
