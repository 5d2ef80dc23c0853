import type { Clock } from '../clock';
import type { RedlockEvents } from '../events';

/** The operations whose node errors are reported. */
export type NodeOperation = 'acquire' | 'fence' | 'extend' | 'release';

/**
 * Which nodes are failing, and since when: every node error is a `node-error` event, and the first answer from a
 * failing node afterwards a `node-recovered` event with how many errors the outage held, so a log can say once
 * that a node went bad and once that it came back.
 */
export class NodeFailures {
  private readonly failing = new Map<string, { since: number; errors: number }>();
  /** How many nodes are failing: read before {@link answered} on the hot path (a field, not a call). */
  failingCount = 0;

  constructor(
    private readonly events: RedlockEvents,
    private readonly clock: Clock,
  ) {}

  /** `node` failed `operation` with `error`. */
  failed(node: string, operation: NodeOperation, error: Error): void {
    const outage = this.failing.get(node);
    if (outage) outage.errors++;
    else {
      this.failing.set(node, { since: this.clock.now(), errors: 1 });
      this.failingCount = this.failing.size;
    }
    if (this.events.has('node-error')) this.events.emit('node-error', { node, operation, error });
  }

  /** `node` answered (whatever its vote): ends its outage, if it had one. Callers check `failingCount` first. */
  answered(node: string): void {
    const outage = this.failing.get(node);
    if (!outage) return;
    this.failing.delete(node);
    this.failingCount = this.failing.size;
    if (this.events.has('node-recovered'))
      this.events.emit('node-recovered', {
        node,
        errors: outage.errors,
        downFor: Math.max(0, Math.round(this.clock.now() - outage.since)),
      });
  }

  /** The nodes failing now. */
  get nodes(): readonly string[] {
    return [...this.failing.keys()];
  }
}
