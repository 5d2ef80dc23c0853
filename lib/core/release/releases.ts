import type { NodeGroup } from '../nodes';
import type { Lock, ReleaseOutcome, ReleaseResult } from '../lock';
import { releaseOnQuorum } from './release';

/**
 * The releases of one instance's locks: each resolves at quorum (`release.ts`), tells the listeners of its
 * instance (the Nest layer's shutdown bookkeeping) and announces `released`; the ones still waiting for their
 * last nodes are kept so that `quit()` lets them finish.
 */
export class Releases {
  private readonly settling = new Set<Promise<unknown>>();
  private readonly listeners = new Set<(lock: Lock) => void>();

  constructor(private readonly plan: NodeGroup) {}

  /** Releases `lock` on every node; a lock already released resolves with nothing released. */
  async release(lock: Lock): Promise<ReleaseResult> {
    if (!lock.markReleased()) return NOTHING_RELEASED;
    const { clock, events } = this.plan;
    const started = clock.now();
    let result: ReleaseResult;
    try {
      result = await releaseOnQuorum(this.plan, lock.keys, lock.value, lock.readerKeys);
    } finally {
      for (const listener of this.listeners) listener(lock);
    }
    const { settled } = result;
    this.settling.add(settled);
    void settled.then(() => this.settling.delete(settled));
    if (events.has('released')) {
      events.emit('released', {
        resources: lock.resources,
        releasedOn: result.releasedOn,
        heldFor: started - lock.grantedAt,
        elapsed: clock.now() - started,
      });
    }
    return result;
  }

  /** Calls `listener` with each lock once its release resolved, however it was released; returns the off switch. */
  onReleased(listener: (lock: Lock) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves once every release that resolved at quorum has its last nodes' answers (each within the node timeout). */
  async settle(): Promise<void> {
    if (this.settling.size > 0) await Promise.all(this.settling);
  }
}

const NOTHING: ReleaseOutcome = Object.freeze({ releasedOn: 0, votes: Object.freeze([]) });
const NOTHING_RELEASED: ReleaseResult = Object.freeze({ ...NOTHING, settled: Promise.resolve(NOTHING) });
