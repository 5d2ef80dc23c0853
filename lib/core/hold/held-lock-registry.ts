import type { Lock } from '../lock';

/**
 * The locks one instance holds, by resource: what `stats.held` counts and what a revocation reaches
 * (docs/DESIGN.md §16). A lock of several resources is tracked under each; released and expired locks are
 * swept out when counted, and amortised as the registry grows.
 */
export class HeldLockRegistry {
  /** The lock of each resource, or a set of them when several share it (readers, permits). */
  private readonly held = new Map<string, Lock | Set<Lock>>();
  /** Above this many tracked resources, released and expired locks are swept out. */
  private sweepAt = 1_024;

  /** A lock was handed out. */
  track(lock: Lock): void {
    for (const resource of lock.resources) {
      const earlier = this.held.get(resource);
      if (earlier === undefined) this.held.set(resource, lock);
      else if (earlier instanceof Set) earlier.add(lock);
      else this.held.set(resource, new Set([earlier, lock]));
    }
    if (this.held.size > this.sweepAt) this.sweep();
  }

  /** A lock was released. */
  untrack(lock: Lock): void {
    for (const resource of lock.resources) {
      const entry = this.held.get(resource);
      if (entry === lock) this.held.delete(resource);
      else if (entry instanceof Set) {
        entry.delete(lock);
        if (entry.size === 0) this.held.delete(resource);
      }
    }
  }

  /** Removes and returns every lock tracked on `resource` (a revocation reached them). */
  take(resource: string): Lock[] {
    const entry = this.held.get(resource);
    if (entry === undefined) return [];
    this.held.delete(resource);
    return entry instanceof Set ? [...entry] : [entry];
  }

  /** How many locks are held now (neither released nor expired). */
  count(): number {
    return this.live().size;
  }

  /** Locks held now by their `template` (counted when read, like {@link count}). */
  byTemplate(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const lock of this.live()) counts.set(lock.template, (counts.get(lock.template) ?? 0) + 1);
    return counts;
  }

  /** Every lock held now, once. */
  private live(): Set<Lock> {
    this.sweep();
    const seen = new Set<Lock>();
    for (const entry of this.held.values()) {
      if (entry instanceof Set) for (const lock of entry) seen.add(lock);
      else seen.add(entry);
    }
    return seen;
  }

  /** Drops released and expired locks (a lock that was never released leaves the registry here). */
  private sweep(): void {
    const gone = (lock: Lock) => lock.isReleased || lock.remainingTime <= 0;
    for (const [resource, entry] of this.held) {
      if (entry instanceof Set) {
        for (const lock of entry) if (gone(lock)) entry.delete(lock);
        if (entry.size === 0) this.held.delete(resource);
      } else if (gone(entry)) this.held.delete(resource);
    }
    this.sweepAt = Math.max(1_024, this.held.size * 2);
  }
}
