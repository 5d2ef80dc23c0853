import { InvalidArgumentError } from './errors';
import { describe } from './messages';

/**
 * Validates what the caller wants to lock and returns it as a list: one resource or a non-empty list of
 * distinct, non-empty strings.
 */
export function normalizeResources(resources: unknown): string[] {
  if (typeof resources === 'string' && resources.length > 0) return [resources]; // the common case
  const list = typeof resources === 'string' ? [resources] : resources;
  if (!Array.isArray(list)) {
    throw new InvalidArgumentError(
      `resources must be a string or an array of strings, got ${describe(resources)}. Example: 'order:42'.`,
    );
  }
  if (list.length === 0) {
    throw new InvalidArgumentError('resources must not be empty: name at least one resource to lock.');
  }
  const seen = new Set<string>();
  for (const resource of list) {
    if (typeof resource !== 'string' || resource.length === 0) {
      throw new InvalidArgumentError(
        `every resource must be a non-empty string, got ${describe(resource)} in ${JSON.stringify(list)}.`,
      );
    }
    if (seen.has(resource)) {
      throw new InvalidArgumentError(
        `resource ${JSON.stringify(resource)} is listed twice; list each resource once.`,
      );
    }
    seen.add(resource);
  }
  return list as string[];
}

/**
 * The Redis key of a resource's lock: `<prefix>{<resource>}`. The braces make the resource a Redis Cluster
 * hash tag, so every key the library keeps about one resource lands in the same slot. Distinct resources
 * always give distinct keys (the mapping is prefix + fixed wrapping).
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
