import { once } from 'node:events';
import type Redis from 'ioredis';
import type { RedisNodeHandle, RedisNodes } from '../support';

/** Closes an admin connection and waits until its socket is gone: no handle of ours lingers into a check. */
export async function closeAdmin(admin: Redis): Promise<void> {
  const ended = once(admin, 'end');
  await admin.quit().catch(() => admin.disconnect());
  await ended;
}

/**
 * What an instance left on the nodes, by its owner label (`owner` option; every owner value ends with
 * `:<label>`): lock keys, permits and writer intents (strings), its entries in readers sets (sorted sets) and
 * in hashes. Fence counters and permit-limit records hold numbers, owned by no one, and outlive locks by design.
 * Nodes that are down or paused are skipped (`from` picks the nodes to read).
 */
export async function leftBy(
  nodes: RedisNodes,
  label: string,
  from: readonly RedisNodeHandle[] = nodes.nodes,
): Promise<string[]> {
  const found: string[] = [];
  const mine = (value: string | null) => (value ?? '').endsWith(`:${label}`);
  for (const node of from) {
    if (!node.running || node.paused) continue;
    const admin = node.redis();
    try {
      for (const key of await admin.keys('*')) {
        const type = await admin.type(key);
        if (type === 'string' && mine(await admin.get(key))) found.push(`${node.index} ${key}`);
        if (type === 'zset' && (await admin.zrange(key, 0, -1)).some(mine))
          found.push(`${node.index} ${key} (member)`);
        if (type === 'hash' && Object.entries(await admin.hgetall(key)).some(([f, v]) => mine(f) || mine(v)))
          found.push(`${node.index} ${key} (field)`);
      }
    } finally {
      await closeAdmin(admin);
    }
  }
  return found;
}

/** Active handles (sockets, timers, ...) by kind: `process.getActiveResourcesInfo()`, counted. */
export function activeHandles(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/** The kinds of handle active now beyond those active at `before`, with how many more. */
export function handlesLeft(before: Map<string, number>): string[] {
  const extra: string[] = [];
  for (const [kind, count] of activeHandles()) {
    const more = count - (before.get(kind) ?? 0);
    if (more > 0) extra.push(`${more} × ${kind}`);
  }
  return extra;
}
