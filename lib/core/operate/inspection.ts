import { createHash } from 'node:crypto';
import {
  type NodeGroup,
  type KeyReading,
  type LockNode,
  type NodeReading,
  type NodeClockReport,
  callNode,
} from '../nodes';
import { withTimeout } from '../clock';
import { InvalidArgumentError } from '../errors';
import { ownerOf } from '../lock';
import { describe, textHint } from '../messages';
import { MAX_PERMITS, readMethodOptions } from '../options';
import { operatorCall } from './operator-call';
import { limitKey, permitKey } from '../primitives';
import { fenceKey, intentKey, lockKey, normalizeResources, queueKeysOf, readersKey } from '../resources';
import { type LockWaiter, type WaitingSummary, waitersOf, waitingOf } from './waiters';

/** One holder of a lock as inspection sees it (docs/DESIGN.md §16). */
export interface LockHolder {
  /** The holder's owner label (the `owner` option of its instance); undefined for a value this library did not write. */
  readonly owner: string | undefined;
  /**
   * A short fingerprint of the holder's owner value, telling two holders with one label apart. Never the value
   * itself: whoever reads the value could delete the lock with it.
   */
  readonly id: string;
  /** When the holder sent its winning attempt: epoch ms, by the holder's clock (undefined: not known). */
  readonly since: number | undefined;
  /** How many ms it has left: the least among the nodes that hold it for this holder (−1: no expiry). */
  readonly ttl: number;
  /** How many nodes hold it for this holder. */
  readonly nodes: number;
  /** A writer (or a semaphore's permit, or a plain lock) or one of several readers. */
  readonly mode: 'write' | 'read';
  /** The permit it holds, for a semaphore's holder. */
  readonly permit?: number;
}

/** What one node holds of a resource. */
export interface NodeInspection {
  readonly node: string;
  /** Why the node could not be read (then nothing else is known of it). */
  readonly error?: string;
  /** The holders on this node (each with `nodes: 1`). */
  readonly holders: readonly LockHolder[];
  /** A waiting writer's intent keeps new readers out on this node. */
  readonly writerWaiting: boolean;
  /** The resource's fence counter here: the last fencing token written (undefined: none yet). */
  readonly fencingToken?: number;
  /** The number of permits recorded here (a semaphore), if any. */
  readonly permits?: number;
  /** The lock key holds something that is not a lock (data without expiry, another type). */
  readonly foreign?: string;
  /**
   * The node's clock as this instance sees it (docs/DESIGN.md §17): how old its last sample is, and the last
   * step seen. Undefined with `detectClockSteps: false`.
   */
  readonly clock?: NodeClockReport;
  /** Fair waiting (docs/DESIGN.md §18): the live tickets here, in the order this node grants them. */
  readonly waiters?: readonly LockWaiter[];
}

/** A resource's lock over every node: `inspect()`'s answer. */
export interface LockInspection {
  readonly resource: string;
  /**
   * `'held'`: at least one holder holds it on a quorum; `'split'`: some nodes hold it, but no holder on a
   * quorum (an acquisition in progress, a lock expiring or partly lost); `'free'`: no node holds it.
   */
  readonly state: 'free' | 'held' | 'split';
  /** The holders that hold it on a quorum (a writer, readers, or a semaphore's permits). */
  readonly holders: readonly LockHolder[];
  /** The largest fencing token written on any node. */
  readonly fencingToken: number | undefined;
  /** The semaphore's number of permits, when one is recorded. */
  readonly permits: number | undefined;
  /** Fair waiters (docs/DESIGN.md §18): how many wait on any node, and the longest wait; undefined: none. */
  readonly waiting?: WaitingSummary;
  /** Each node's view, in the order of the instance's nodes. */
  readonly nodes: readonly NodeInspection[];
}

/** What inspection needs of its instance. */
export interface InspectionContext {
  readonly group: NodeGroup;
  readonly keyPrefix: string;
}

/**
 * Reads every node's keys of `resource` (one script call per node, a second one for a semaphore's permits) and
 * merges them into the quorum's view. Read-only; a node that cannot be read within the node timeout is reported
 * with its error.
 */
export async function inspectResource(context: InspectionContext, resource: string): Promise<LockInspection> {
  const { group, keyPrefix } = context;
  const key = lockKey(keyPrefix, resource);
  const [queue, live] = queueKeysOf([key]);
  const base = [
    key,
    readersKey(key),
    intentKey(key),
    fenceKey(keyPrefix, resource),
    limitKey(key),
    queue,
    live,
  ];
  const readings = await readAll(group, base);
  const permits = largestLimit(readings, 4);
  const permitKeys = Array.from({ length: permits }, (_, slot) => permitKey(key, slot));
  const permitReadings = permits > 0 ? await readAll(group, permitKeys) : [];
  const nodes = group.nodes.map((node, index): NodeInspection => {
    const reading = readings[index];
    if (!reading || reading instanceof Error) {
      const error = (reading as Error | undefined)?.message ?? 'no answer';
      return { node: node.name, error, holders: [], writerWaiting: false };
    }
    const [lock, readers, intent, fence, limit, tickets, expiries] = reading.keys;
    const holders: LockHolder[] = [];
    let foreign: string | undefined;
    if (lock.type === 'string') {
      if (lock.pttl === -1) foreign = 'a value without expiry';
      else holders.push(holderOf(lock.value, lock.pttl, 'write'));
    } else if (lock.type === 'other') foreign = `a ${lock.name}`;
    if (readers.type === 'zset') {
      for (const [member, expiresAt] of readers.members) {
        const left = Math.round(expiresAt - reading.time);
        if (left > 0) holders.push(holderOf(member, left, 'read'));
      }
    }
    const permitReading = permitReadings[index];
    if (permitReading && !(permitReading instanceof Error)) {
      permitReading.keys.forEach((slot, permit) => {
        if (slot.type === 'string' && slot.pttl !== -1)
          holders.push({ ...holderOf(slot.value, slot.pttl, 'write'), permit });
      });
    }
    const clock = group.clocks?.report(node.name);
    const waiters = waitersOf(tickets, expiries, reading.time, fingerprint);
    const view: NodeInspection = {
      node: node.name,
      ...(clock ? { clock } : {}),
      ...(waiters.length > 0 ? { waiters } : {}),
      holders,
      writerWaiting: intent.type === 'string',
      ...(integerValue(fence) !== undefined ? { fencingToken: integerValue(fence) } : {}),
      ...(integerValue(limit) !== undefined ? { permits: integerValue(limit) } : {}),
      ...(foreign ? { foreign } : {}),
    };
    return view;
  });
  return merge(resource, group.quorum, nodes);
}

/** Every node's reading of `keys`, or the error it gave; never rejects. */
export function readAll(group: NodeGroup, keys: readonly string[]): Promise<(NodeReading | Error)[]> {
  return Promise.all(
    group.nodes.map((node) =>
      readNode(group, node, keys).catch((error: unknown) =>
        error instanceof Error ? error : new Error(String(error)),
      ),
    ),
  );
}

function readNode(group: NodeGroup, node: LockNode, keys: readonly string[]): Promise<NodeReading> {
  if (!node.inspect)
    return Promise.reject(new Error(`${node.name} cannot be inspected (its LockNode has no inspect())`));
  const sent = group.clock.now();
  return operatorCall(group, node, 'inspect', () => node.inspect!(keys), 'inspection').then((reading) => {
    // The reading's TIME is one more sample of the node's clock (docs/DESIGN.md §17).
    if (group.clocks && Number.isFinite(reading.time)) group.clocks.observe(node.name, reading.time, sent);
    return reading;
  });
}

/**
 * The most permits any node records, from each node's reading of the limit key (at `index`): 0 when none does,
 * never more than a semaphore may have.
 */
export function largestLimit(readings: readonly (NodeReading | Error)[], index: number): number {
  const limits = readings.map((reading) =>
    reading instanceof Error ? 0 : Math.max(0, integerValue(reading.keys[index]) ?? 0),
  );
  return Math.min(MAX_PERMITS, Math.max(0, ...limits));
}

/** The holders found on a quorum of nodes, merged per owner value (and permit). */
function merge(resource: string, quorum: number, nodes: readonly NodeInspection[]): LockInspection {
  const seen = new Map<string, LockHolder>();
  for (const node of nodes) {
    for (const holder of node.holders) {
      const id = `${holder.id}/${holder.mode}/${holder.permit ?? ''}`;
      const earlier = seen.get(id);
      seen.set(
        id,
        earlier ? { ...earlier, nodes: earlier.nodes + 1, ttl: Math.min(earlier.ttl, holder.ttl) } : holder,
      );
    }
  }
  const holders = [...seen.values()].filter((holder) => holder.nodes >= quorum);
  const anyHeld = nodes.some((node) => node.holders.length > 0);
  const tokens = nodes
    .map((node) => node.fencingToken)
    .filter((token): token is number => token !== undefined);
  const limits = nodes.map((node) => node.permits).filter((limit): limit is number => limit !== undefined);
  const waiting = waitingOf(nodes.map((node) => node.waiters));
  return {
    resource,
    state: holders.length > 0 ? 'held' : anyHeld ? 'split' : 'free',
    holders,
    fencingToken: tokens.length > 0 ? Math.max(...tokens) : undefined,
    permits: limits.length > 0 ? Math.max(...limits) : undefined,
    ...(waiting ? { waiting } : {}),
    nodes,
  };
}

function holderOf(value: string, ttl: number, mode: 'write' | 'read'): LockHolder {
  const owner = ownerOf(value);
  return {
    owner: owner?.label,
    id: fingerprint(value),
    since: owner?.since,
    ttl,
    nodes: 1,
    mode,
  };
}

/** 8 hex digits of the value's SHA-256: enough to tell holders apart, nothing to release a lock with. */
export function fingerprint(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 8);
}

function integerValue(reading: KeyReading | undefined): number | undefined {
  if (!reading || reading.type !== 'string' || !/^-?\d+$/.test(reading.value)) return undefined;
  const value = Number(reading.value);
  return Number.isSafeInteger(value) ? value : undefined;
}

/** The most locks `holders()` lists at once. */
export const MAX_HOLDERS = 10_000;

/**
 * The locks held under the instance's key prefix (resources starting with `prefix`): each node is scanned for
 * lock keys, readers sets and permit keys (SCAN, never KEYS), the resources found are merged across nodes and
 * inspected, 8 at a time; free ones are left out. At most `limit` resources are inspected.
 */
export async function listHolders(
  context: InspectionContext,
  prefix: string,
  limit: number,
): Promise<LockInspection[]> {
  const { group, keyPrefix } = context;
  const start = `${keyPrefix}{${prefix}`;
  const pattern = `${escapeGlob(start)}*`;
  const scans = await Promise.all(
    group.nodes.map((node) =>
      node.scanKeys
        ? withTimeout(
            callNode(node, 'scanKeys', () => node.scanKeys!(pattern, limit * KEYS_PER_RESOURCE)),
            SCAN_TIMEOUT,
            () => new Error(`${node.name} did not finish scanning in time`),
          ).catch(() => [] as string[])
        : [],
    ),
  );
  const resources = new Set<string>();
  for (const keys of scans) {
    for (const key of keys) {
      const resource = resourceOfKey(keyPrefix, key);
      if (resource !== undefined && resource.startsWith(prefix) && resources.size < limit)
        resources.add(resource);
    }
  }
  const list = [...resources].sort();
  const inspections: LockInspection[] = [];
  for (let i = 0; i < list.length; i += INSPECT_AT_ONCE) {
    const batch = await Promise.all(
      list.slice(i, i + INSPECT_AT_ONCE).map((r) => inspectResource(context, r)),
    );
    for (const inspection of batch) if (inspection.state !== 'free') inspections.push(inspection);
  }
  return inspections;
}

/** Keys one resource may have besides its lock key (readers, intent, fence, permits, limit): scan room for them. */
const KEYS_PER_RESOURCE = 4;
const INSPECT_AT_ONCE = 8;
/** A scan pages through the whole keyspace: it may take far longer than a lock operation. */
const SCAN_TIMEOUT = 30_000;

/**
 * The resource a key belongs to, when it is a lock key (`<prefix>{r}`), a readers set (`<prefix>{r}:readers`) or a
 * permit key (`<prefix>{r}#<n>`); undefined for fence counters, intents, limits and any other key.
 */
export function resourceOfKey(keyPrefix: string, key: string): string | undefined {
  if (!key.startsWith(`${keyPrefix}{`)) return undefined;
  let body = key.slice(keyPrefix.length + 1);
  if (body.endsWith('}:readers')) body = body.slice(0, -':readers'.length);
  else {
    const permit = /}#\d+$/.exec(body);
    if (permit) body = body.slice(0, permit.index + 1);
  }
  if (!body.endsWith('}')) return undefined;
  return body.slice(0, -1);
}

/** `value` with the glob characters of SCAN's MATCH escaped. */
function escapeGlob(value: string): string {
  return value.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/** `resource` checked as one resource name (as `acquire()` checks each). */
export function oneResource(resource: unknown, operation: string): string {
  if (typeof resource !== 'string' || resource.length === 0) {
    const rule = typeof resource === 'string' ? ', a non-empty string,' : ' (a string),';
    throw new InvalidArgumentError(
      `${operation}() takes one resource name${rule} got ${describe(resource)}. Example: ${operation}('order:42'); ` +
        `${operation} each resource in a call of its own.`,
    );
  }
  return normalizeResources(resource)[0];
}

/** `holders()`'s options checked, defaults applied. */
export function holdersOptions(options: unknown): { prefix: string; limit: number } {
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError(
      `holders() options must be an object like ${HOLDERS_EXAMPLE}, got ${describe(options)}. ` +
        'Leave it out to list every lock.',
    );
  }
  const read = readMethodOptions(options, HOLDERS_OPTION_KEYS, 'holders() option', HOLDERS_EXAMPLE);
  const { prefix = '', limit = DEFAULT_HOLDERS } = read;
  if (typeof prefix !== 'string') {
    throw new InvalidArgumentError(
      `holders() prefix must be a string (the start of resource names), got ${describe(prefix)}. ` +
        "Example: { prefix: 'order:' }; leave it out for every resource.",
    );
  }
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_HOLDERS) {
    throw new InvalidArgumentError(
      `holders() limit must be a whole number from 1 to ${MAX_HOLDERS}, got ${describe(limit)}.` +
        `${textHint(limit, 'number')} Default: ${DEFAULT_HOLDERS}.`,
    );
  }
  return { prefix, limit };
}

/** holders()'s options, as an example in its messages. */
const HOLDERS_EXAMPLE = "{ prefix: 'order:', limit: 100 }";
/** How many holders are listed when no limit is given. */
const DEFAULT_HOLDERS = 100;

const HOLDERS_OPTION_KEYS: ReadonlySet<string> = new Set(['prefix', 'limit']);
