import { InvalidArgumentError, LockLostError } from './errors';
import { notAListener, unknownEvent } from './messages';
import { nearestName } from './nearest';

/** Why a term of leadership ended, as the `deposed` event says. */
export type DeposedReason = 'returned' | 'failed' | 'lost' | 'aborted';

/** What each event of a {@link Redlock} instance carries. Events are for metrics and tracing. */
export interface RedlockEventMap {
  /** A lock was acquired. `elapsed`: ms from the call to the grant, all attempts included. */
  acquired: {
    resources: readonly string[];
    attempts: number;
    elapsed: number;
    fencingToken: number | undefined;
    /** `'read'` or `'write'` (read-write locks; an exclusive lock is a writer). */
    mode: 'read' | 'write';
    /** With `permits`: the semaphore's number of permits (the one held: `lock.permit`). */
    permits: number | undefined;
  };
  /**
   * A lock was released (when `release()` resolved); `releasedOn`: how many nodes had deleted its keys by
   * then (a quorum, unless it had expired on some nodes); `heldFor`: ms since it was granted; `elapsed`: ms
   * the release took.
   */
  released: { resources: readonly string[]; releasedOn: number; heldFor: number; elapsed: number };
  /** A lock was extended; `remainingTime`: its new validity in ms; `elapsed`: ms the extension took. */
  extended: { resources: readonly string[]; remainingTime: number; elapsed: number };
  /** A held lock can no longer be guaranteed (see `Lock.signal`). */
  lost: { resources: readonly string[]; error: LockLostError };
  /** An acquisition gave up because another owner held a resource (`LockBusyError`, or `tryAcquire` → null). */
  busy: {
    resources: readonly string[];
    attempts: number;
    waited: number;
    mode: 'read' | 'write';
    permits: number | undefined;
  };
  /**
   * An acquisition gave up because too few nodes could take the lock (`QuorumUnavailableError`);
   * `retryAfter`: ms until a quorum is past the restart guard, when that is what kept it away.
   */
  unavailable: {
    resources: readonly string[];
    attempts: number;
    waited: number;
    retryAfter: number | undefined;
    mode: 'read' | 'write';
    permits: number | undefined;
  };
  /**
   * This instance became leader of `resources[0]` through `lead()`. `fencingToken` is the fleet-wide order of
   * terms: larger for every later term, whichever instance holds it. `termOfCall` counts the terms of this one
   * `lead()` call, from 1 (two successive leaders on two instances may both report 1).
   */
  elected: {
    resources: readonly string[];
    termOfCall: number;
    /** @deprecated The same value as `termOfCall` (it never counted across the fleet); use `fencingToken`. */
    term: number;
    fencingToken: number;
  };
  /**
   * A term of `lead()` ended: its work `returned` or `failed` (threw), its lease was `lost`, or the caller's
   * signal `aborted` it. After `lost`, a new term follows unless `recampaign` is false.
   */
  deposed: {
    resources: readonly string[];
    /** The `termOfCall` of the term that ended. */
    termOfCall: number;
    /** @deprecated The same value as `termOfCall`; use `fencingToken`. */
    term: number;
    /** The ended term's lease token, as `elected` said it. */
    fencingToken: number;
    reason: DeposedReason;
  };
  /** This instance revoked a lock (`revoke()`): on how many nodes it deleted something. */
  revoked: { resource: string; reason: string; revokedOn: number };
  /** A node answered with an error or could not be asked. */
  'node-error': { node: string; operation: 'acquire' | 'fence' | 'extend' | 'release'; error: Error };
  /**
   * A node that had failed (`node-error`) answered again: `errors` it failed with since its first error,
   * `downFor` ms from that first error to this answer.
   */
  'node-recovered': { node: string; errors: number; downFor: number };
  /**
   * A node's wall clock stepped by `step` ms (positive: forward) between two of its answers to this instance
   * (docs/DESIGN.md §17): its grants do not count for the restart guard's window, as after a restart.
   */
  'clock-step': { node: string; step: number };
  /**
   * A fair waiter (`fair: true`, docs/DESIGN.md §18) learnt its place in the queue, or that it changed:
   * `position` 1 goes next; `waited`: ms since the call came (its time queued in this process included).
   */
  waiting: { resources: readonly string[]; position: number; waited: number };
}

/** The name of an event of {@link RedlockEventMap}. */
export type RedlockEventName = keyof RedlockEventMap;

/** Every event name, for validating `on()` (a misspelt name would otherwise never fire, silently). */
export const EVENT_NAMES: readonly RedlockEventName[] = Object.freeze([
  'acquired',
  'released',
  'extended',
  'lost',
  'busy',
  'unavailable',
  'elected',
  'deposed',
  'revoked',
  'node-error',
  'node-recovered',
  'clock-step',
  'waiting',
]);

/** Refuses an unknown event name (suggesting the near one) and, with `listener`, a non-function. */
export function checkSubscription(event: unknown, listener: unknown, checkListener: boolean): void {
  if (typeof event !== 'string' || !(EVENT_NAMES as readonly string[]).includes(event)) {
    const near = typeof event === 'string' ? nearestName(event, EVENT_NAMES) : undefined;
    throw new InvalidArgumentError(unknownEvent(event, EVENT_NAMES, near));
  }
  if (checkListener && typeof listener !== 'function')
    throw new InvalidArgumentError(notAListener(event, listener));
}

/**
 * A small typed event emitter. A listener that throws is ignored: observing locks must never break them.
 * Emitting with no listeners costs one map lookup, and callers build payloads only when {@link has} says so.
 */
export class RedlockEvents {
  private readonly listeners = new Map<RedlockEventName, Set<(payload: never) => void>>();

  on<E extends RedlockEventName>(event: E, listener: (payload: RedlockEventMap[E]) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(listener as (payload: never) => void);
    return () => this.off(event, listener);
  }

  off<E extends RedlockEventName>(event: E, listener: (payload: RedlockEventMap[E]) => void): void {
    const set = this.listeners.get(event);
    if (!set) return;
    set.delete(listener as (payload: never) => void);
    if (set.size === 0) this.listeners.delete(event);
  }

  has(event: RedlockEventName): boolean {
    return this.listeners.has(event);
  }

  emit<E extends RedlockEventName>(event: E, payload: RedlockEventMap[E]): void {
    const set = this.listeners.get(event);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as (payload: RedlockEventMap[E]) => void)(payload);
      } catch {
        // ignored on purpose: see the class comment
      }
    }
  }
}
