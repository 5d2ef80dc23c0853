import type { Clock } from '../clock';
import type { RedlockEvents } from '../events';
import type { AcquireReply } from './lock-node';
import { clockStepped } from '../messages';

/**
 * How fast a node's wall clock may drift from this instance's monotonic clock without a step, as a fraction
 * (1 ms per second: twice the fastest slew NTP applies).
 */
export const CLOCK_DRIFT_RATE = 0.001;

/** ms added to every allowance: `TIME` reaches the core in whole ms, so two samples may differ by 1 ms each. */
export const CLOCK_SLACK = 2;

/**
 * A grant a node gave right after its clock stepped (docs/DESIGN.md §17): the node wrote the keys, but its vote
 * does not count until `since` reaches the window. Core-internal: no node answers it.
 */
export interface SteppedGrant {
  readonly outcome: 'stepped';
  /** The step, in ms: positive forward, negative back (a lower bound of its size). */
  readonly step: number;
  /** ms since the step was seen. */
  readonly since: number;
  /** How long after a step the node's grants do not count, in ms (this acquisition's window). */
  readonly window: number;
}

/** An acquire reply as the core counts it: the node's, or a grant that does not count after a clock step. */
export type CountedReply = AcquireReply | SteppedGrant;

/** A node's clock as this instance last saw it. */
interface ClockSample {
  /** The offset `server TIME − monotonic now` lies in [lo, hi] (the bracket of send and receive). */
  lo: number;
  hi: number;
  /** When the request of the sample was sent (monotonic ms). */
  sent: number;
  /** When the latest step was seen (monotonic ms), and its size in ms. */
  steppedAt?: number;
  step?: number;
}

/** One node's clock, as `inspect()` and health report it. */
export interface NodeClockReport {
  /** ms since this instance last read the node's `TIME`. */
  readonly sampleAge: number;
  /** The latest step seen on the node, in ms (positive forward), and how long ago. */
  readonly lastStep?: { readonly step: number; readonly ago: number };
}

/**
 * Detects a node whose wall clock stepped (docs/DESIGN.md §17). Per node it keeps the offset between the
 * server's `TIME` and this instance's monotonic clock as an interval: each acquire reply carries the server's
 * `TIME`, read between the request's send and its answer's receipt, so the offset is known within that round
 * trip — and, while no step is seen, within the last interval widened by drift too (their overlap is kept).
 * When a new sample's bracket lies further from the last one than drift can explain ({@link CLOCK_DRIFT_RATE}
 * × the time between them + {@link CLOCK_SLACK}), the clock stepped: a
 * `clock-step` event names the node and the step, and its grants do not count for the window, as after a
 * restart (its keys may have expired early while another owner still holds a quorum).
 */
export class NodeClocks {
  private readonly samples = new Map<string, ClockSample>();

  constructor(
    private readonly clock: Clock,
    private readonly events: RedlockEvents,
    private readonly logger?: { warn(message: string): void },
  ) {}

  /**
   * `reply` from `node` to a request sent at `sent` (monotonic ms): records its `TIME`, and turns a grant
   * within `window` ms of a step into a {@link SteppedGrant}.
   */
  judge(node: string, reply: AcquireReply, sent: number, window: number): CountedReply {
    if (reply.outcome === 'refused' || reply.time === undefined) return reply;
    const sample = this.observe(node, reply.time, sent);
    if (reply.outcome !== 'acquired' || sample.steppedAt === undefined) return reply;
    const since = this.clock.now() - sample.steppedAt;
    if (since >= window) return reply;
    return { outcome: 'stepped', step: sample.step!, since: Math.round(since), window };
  }

  /** Records that `node`'s clock read `time` (epoch ms) between `sent` and now; reports a step. */
  observe(node: string, time: number, sent: number): ClockSample {
    const received = this.clock.now();
    const lo = time - received;
    const hi = time - sent;
    const last = this.samples.get(node);
    if (!last) {
      const first: ClockSample = { lo, hi, sent };
      this.samples.set(node, first);
      return first;
    }
    const allowance = CLOCK_DRIFT_RATE * Math.max(0, received - last.sent) + CLOCK_SLACK;
    const forward = lo - last.hi;
    const back = last.lo - hi;
    const step = forward > allowance ? forward : back > allowance ? -back : 0;
    // An answer to an older request (another connection, a re-send) is checked but does not become the latest.
    if (sent >= last.sent) {
      // No step: the offset lies in both brackets (the last one widened by the allowance). Kept as their
      // overlap, so a slow answer's wide bracket does not blur a narrow one, in which a later step would hide.
      last.lo = step === 0 ? Math.max(lo, last.lo - allowance) : lo;
      last.hi = step === 0 ? Math.min(hi, last.hi + allowance) : hi;
      last.sent = sent;
    }
    if (step !== 0) {
      last.steppedAt = received;
      last.step = Math.round(step);
      this.logger?.warn(clockStepped(node, last.step));
      if (this.events.has('clock-step')) this.events.emit('clock-step', { node, step: last.step });
    }
    return last;
  }

  /** What this instance knows of `node`'s clock, or undefined before its first sample. */
  report(node: string): NodeClockReport | undefined {
    const sample = this.samples.get(node);
    if (!sample) return undefined;
    const now = this.clock.now();
    const sampleAge = Math.max(0, Math.round(now - sample.sent));
    if (sample.steppedAt === undefined) return { sampleAge };
    return { sampleAge, lastStep: { step: sample.step!, ago: Math.round(now - sample.steppedAt) } };
  }
}
