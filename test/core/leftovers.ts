import { type AsyncHook, createHook } from 'node:async_hooks';
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

/** Active handles by kind (`process.getActiveResourcesInfo()`, counted), and the timers created since. */
export interface HandleSnapshot {
  readonly counts: Map<string, number>;
  /** Timers created from here on are tracked with where they were created (see {@link handlesLeft}). */
  readonly timersFrom: number;
}

/** What is read of a Timeout: whether it still keeps the process alive, and whether it was cleared. */
interface TimerResource {
  hasRef?: () => boolean;
  _destroyed?: boolean;
}

/** Every Timeout created while a snapshot is open: its resource, its number, and the code that created it. */
const timers = new Map<
  number,
  { readonly resource: TimerResource; readonly serial: number; readonly site: string[] }
>();
let timerHook: AsyncHook | undefined;
let openSnapshots = 0;
const closed = new WeakSet<HandleSnapshot>();
let timerSerial = 0;

/** `process.getActiveResourcesInfo()`, counted by kind. */
function countByKind(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/** The frames of the code that created a timer: the stack without Node's own frames and this file's. */
function creationSite(): string[] {
  const lines = (new Error().stack ?? '').split('\n').slice(1);
  return lines
    .map((line) => line.trim().replace(/^at /, ''))
    .filter((line) => !/\(node:|^node:|leftovers\.ts/.test(line))
    .map((line) => line.replace(`${process.cwd()}/`, ''))
    .slice(0, 5);
}

/** Jest's own timers (a reporter's status, in a run in band) run in the test's process: not the library's. */
function createdByJest(site: readonly string[]): boolean {
  return site.length > 0 && /node_modules[\\/](@jest[\\/]|jest-)/.test(site[0]);
}

/** Active handles (sockets, timers, ...) by kind, counted; starts tracking where new timers come from. */
export function activeHandles(): HandleSnapshot {
  openSnapshots++;
  timerHook ??= createHook({
    init(id, type, _trigger, resource) {
      if (type !== 'Timeout') return;
      timers.set(id, { resource: resource as TimerResource, serial: ++timerSerial, site: creationSite() });
    },
    destroy(id) {
      timers.delete(id);
    },
  }).enable();
  return { counts: countByKind(), timersFrom: timerSerial };
}

/**
 * The kinds of handle active after one event-loop turn beyond those active at `before`, with how many more. Timers are counted
 * from their creation instead: those created since `before`, still pending and keeping the process alive,
 * except Jest's own; each is named with the code that created it.
 */
export async function handlesLeft(before: HandleSnapshot): Promise<string[]> {
  // One turn of the event loop first: an Immediate queued before it (a one-off callback) has run by then.
  await new Promise((resolve) => setImmediate(resolve));
  const extra: string[] = [];
  for (const [kind, count] of countByKind()) {
    const more = count - (before.counts.get(kind) ?? 0);
    if (kind !== 'Timeout' && more > 0) extra.push(`${more} × ${kind}`);
  }
  const sites: string[] = [];
  for (const { resource, serial, site } of timers.values()) {
    if (serial <= before.timersFrom || createdByJest(site)) continue;
    // Cleared (its destroy hook comes later, asynchronously) or unref'd: it keeps nothing alive.
    if (resource._destroyed === true || resource.hasRef?.() === false) continue;
    sites.push(site.join(' < '));
  }
  if (sites.length > 0) extra.push(`${sites.length} × Timeout (created at ${sites.join('; ')})`);
  // The hook is process-wide (Jest runs other files in this worker later): off once no snapshot is open.
  if (!closed.has(before) && --openSnapshots === 0) {
    timerHook?.disable();
    timerHook = undefined;
    timers.clear();
  }
  closed.add(before);
  return extra;
}
