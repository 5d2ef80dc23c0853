import type { Redis } from 'ioredis';
import { ACQUIRE_SCRIPT, EXTEND_SCRIPT, LuaScript, RELEASE_SCRIPT } from './scripts';

/** What a node answered to an acquire request. */
export type AcquireReply =
  { readonly acquired: true } | { readonly acquired: false; readonly holderTtl: number };

/**
 * One independent Redis node as the algorithm sees it. The core reaches Redis only through this interface,
 * so a simulation can stand in virtual nodes. Each method applies the guarantees of the matching Lua script
 * in `scripts.ts` atomically on the node, and rejects when the node cannot be asked.
 */
export interface LockNode {
  /** A stable, human-readable name used in messages (for Redis: `host:port`). */
  readonly name: string;
  acquire(keys: readonly string[], owner: string, ttl: number): Promise<AcquireReply>;
  /** Resolves true when every key was still held by `owner` and now has the new ttl. */
  extend(keys: readonly string[], owner: string, ttl: number): Promise<boolean>;
  /** Resolves the number of keys deleted (only keys held by `owner` are deleted). */
  release(keys: readonly string[], owner: string): Promise<number>;
}

/** The node is not connected, so a command was not sent (rather than queued for a later replay). */
export class NodeNotConnectedError extends Error {
  constructor(status: string) {
    super(`not connected (client status "${status}")`);
    this.name = 'NodeNotConnectedError';
  }
}

/**
 * A {@link LockNode} over an ioredis client. Scripts are called by SHA and re-sent in full when the node
 * answers NOSCRIPT (its script cache was flushed or it restarted), so `SCRIPT FLUSH` never breaks locking.
 *
 * Commands are sent only while the client is `ready`. Otherwise ioredis would queue them offline and
 * replay them after reconnecting, possibly onto a restarted node long after the caller gave up.
 */
export class IoredisLockNode implements LockNode {
  readonly name: string;

  constructor(
    readonly client: Redis,
    name?: string,
  ) {
    this.name = name ?? describeClient(client);
  }

  async acquire(keys: readonly string[], owner: string, ttl: number): Promise<AcquireReply> {
    const reply = (await this.run(ACQUIRE_SCRIPT, keys, owner, ttl)) as [number, number?];
    return reply[0] === 1 ? ACQUIRED : { acquired: false, holderTtl: Number(reply[1] ?? -1) };
  }

  async extend(keys: readonly string[], owner: string, ttl: number): Promise<boolean> {
    return (await this.run(EXTEND_SCRIPT, keys, owner, ttl)) === 1;
  }

  async release(keys: readonly string[], owner: string): Promise<number> {
    return Number(await this.run(RELEASE_SCRIPT, keys, owner));
  }

  private async run(
    script: LuaScript,
    keys: readonly string[],
    ...args: (string | number)[]
  ): Promise<unknown> {
    const status = this.client.status;
    if (status !== 'ready') throw new NodeNotConnectedError(status);
    try {
      return await this.client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      // The script cache was flushed: EVAL runs it and caches it again for the next EVALSHA.
      return await this.client.eval(script.source, keys.length, ...keys, ...args);
    }
  }
}

const ACQUIRED: AcquireReply = Object.freeze({ acquired: true });

/** `host:port` of an ioredis client, for messages and duplicate detection. */
export function describeClient(client: Redis): string {
  const options = client.options ?? {};
  if (options.path) return options.path;
  return `${options.host ?? '127.0.0.1'}:${options.port ?? 6379}`;
}
