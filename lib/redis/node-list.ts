import { InvalidArgumentError } from '../core';

/**
 * The `nodes` argument read once into a plain array, so a getter or Proxy trap that throws is refused as such
 * (docs/DESIGN.md §11) instead of surfacing from further in; anything that is not an array is passed on for
 * `resolveNodes` to refuse with what nodes may be.
 */
export function nodeList(specs: unknown): unknown {
  try {
    return Array.isArray(specs) ? Array.from(specs as unknown[]) : specs;
  } catch (error) {
    throw new InvalidArgumentError(
      `nodes could not be read: ${String(error)} (a getter or Proxy trap threw). Pass a plain array: ` +
        "['redis://10.0.0.1:6379', 'redis://10.0.0.2:6379', 'redis://10.0.0.3:6379'].",
    );
  }
}

/** An entry of `nodes` that threw while it was read or its client was made (not a refusal of ours). */
export function unusableNode(index: number, error: unknown): InvalidArgumentError {
  if (error instanceof InvalidArgumentError) return error;
  return new InvalidArgumentError(
    `nodes[${index}] could not be used: ${String(error)} (thrown while reading it or making its client). Pass a ` +
      'redis:// URL, plain ioredis options, an ioredis client or Cluster, or a LockNode.',
  );
}
