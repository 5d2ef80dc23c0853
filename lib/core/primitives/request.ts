import { newOwnerValue } from '../lock';
import type { AcquireRequest } from '../nodes';
import type { CallSettings } from '../options';
import { fenceKey, intentKey, lockKey, queueKeysOf, readersKey } from '../resources';

/** What every acquisition of one instance shares: the key prefix, the guard key, the writer intent's ttl. */
export interface KeyPlan {
  readonly keyPrefix: string;
  readonly guardKey: string;
  /** How long a waiting writer's intent keeps readers out without a new attempt (docs/DESIGN.md §15). */
  readonly intentTtl: number;
  /** The instance's owner label, written in every owner value (docs/DESIGN.md §16). */
  readonly ownerLabel: string;
}

/**
 * What one acquisition asks of every node: its keys, owner value (the first attempt's), ttl and guard; a
 * lock's readers and intent keys (every lock is a reader or a writer, §15), none for a semaphore's permits,
 * which are plain exclusive locks (§14). `mayWait`: the call will retry a busy lock, so a writer may set its intent.
 */
export function requestFor(
  plan: KeyPlan,
  resources: readonly string[],
  settings: CallSettings,
  mayWait: boolean,
): AcquireRequest {
  const prefix = plan.keyPrefix;
  const keys = resources.map((resource) => lockKey(prefix, resource));
  const owner = newOwnerValue(plan.ownerLabel);
  const fenceKeys = settings.fencing ? resources.map((resource) => fenceKey(prefix, resource)) : NO_KEYS;
  // One object literal: a spread of a first object plus added properties costs ~5 µs a call on Node 20.
  const rw = settings.permits === undefined;
  const firstWithout = !settings.fair && settings.mode !== 'read';
  return {
    keys,
    fenceKeys,
    owner,
    ttl: settings.ttl,
    guardWindow: settings.guardWindow,
    guardKey: plan.guardKey,
    mode: rw ? settings.mode : undefined,
    readerKeys: rw ? keys.map(readersKey) : undefined,
    intentKeys: rw ? keys.map(intentKey) : undefined,
    intent: rw ? owner : undefined,
    // A call that cannot wait for the lock (tryAcquire, wait 0, a scheduled tick) sets no intent (§15), nor
    // does a writer's first attempt unless it is fair (a ticket is its place in the queue, §18).
    intentTtl: rw ? (mayWait && !firstWithout ? plan.intentTtl : 0) : undefined,
    laterIntentTtl: rw && mayWait && firstWithout ? plan.intentTtl : undefined,
    // Fair waiting (§18): the intent id is the ticket, kept alive (and expiring) like the intent.
    queueKeys: rw && settings.fair ? queueKeysOf(keys) : undefined,
    waited: rw && settings.fair ? 0 : undefined,
  };
}

/**
 * One id per set of keys, whatever their order, for the local queue (a semaphore: its limit key). Two sets
 * sharing an id (a resource name containing '}\n') would only take turns; the locks stay independent.
 */
export function keySetId(keys: readonly string[]): string {
  return keys.length === 1 ? keys[0] : [...keys].sort().join('\n');
}

const NO_KEYS: readonly string[] = Object.freeze([]);
