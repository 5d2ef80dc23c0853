import { createHash } from 'node:crypto';

/**
 * A Lua script as the nodes run it (its source and SHA1, for EVALSHA with EVAL as the fallback), and the KEYS
 * and ARGV of one call.
 */

/** A Lua script with its SHA1, so nodes can call it by digest (EVALSHA) and fall back to EVAL. */
export interface LuaScript {
  readonly source: string;
  readonly sha: string;
}

/** KEYS and ARGV of one script call. */
export interface ScriptCall {
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
}

export function script(source: string): LuaScript {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * Whether this is a client's first call of `script` (`sent`: the SHAs that client has sent in full), and
 * records it: a first call goes in full (EVAL loads the script), so a client's first use costs no NOSCRIPT
 * round trip; later calls go by digest, and a node that lost its script cache answers NOSCRIPT as before.
 */
export function firstCallOf(sent: Set<string>, script: LuaScript): boolean {
  if (sent.has(script.sha)) return false;
  sent.add(script.sha);
  return true;
}
