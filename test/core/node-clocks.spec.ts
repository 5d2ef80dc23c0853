import { CLOCK_DRIFT_RATE, CLOCK_SLACK, NodeClocks } from '../../lib/core/nodes';
import { RedlockEvents } from '../../lib/core/events';
import { VirtualClock } from './virtual-clock';

/**
 * The clock-step check as a pure unit (docs/DESIGN.md §17) on a virtual clock: what counts as a step (beyond
 * drift over the time between two samples, bracketed by each request's round trip), which grants stop counting
 * and for how long, and that answers to older requests never replace the latest sample.
 */
describe('NodeClocks: a node whose wall clock stepped', () => {
  const EPOCH = 1_700_000_000_000;
  let clock: VirtualClock;
  let steps: { node: string; step: number }[];
  let clocks: NodeClocks;

  beforeEach(() => {
    clock = new VirtualClock();
    clock.time = 1_000;
    steps = [];
    const events = new RedlockEvents();
    events.on('clock-step', (event) => steps.push(event));
    clocks = new NodeClocks(clock, events);
  });

  /** The node answers a request sent `rtt` ms ago with its clock `offset` ms off the true one. */
  function answer(outcome: 'acquired' | 'busy', offset: number, rtt = 1, window = 1_000) {
    const sent = clock.time - rtt;
    const time = EPOCH + clock.time - rtt / 2 + offset;
    const reply =
      outcome === 'acquired'
        ? ({ outcome, token: 0, time } as const)
        : ({ outcome, holderTtl: 500, time } as const);
    return clocks.judge('n1', reply, sent, window);
  }

  it('the first sample is a baseline: nothing to compare, the grant counts', () => {
    expect(answer('acquired', 5_000).outcome).toBe('acquired');
    expect(steps).toEqual([]);
  });

  it('a forward step between a busy answer and a grant makes the grant not count; both signs reported', () => {
    answer('busy', 0);
    clock.time += 10;
    const judged = answer('acquired', 600);
    expect(judged).toMatchObject({ outcome: 'stepped', since: 0, window: 1_000 });
    expect((judged as { step: number }).step).toBeGreaterThanOrEqual(598);
    expect((judged as { step: number }).step).toBeLessThanOrEqual(600);
    clock.time += 10;
    answer('busy', 0);
    expect(steps.map((s) => Math.sign(s.step))).toEqual([1, -1]);
  });

  it('the node counts again once the window after its last step has passed', () => {
    answer('busy', 0);
    clock.time += 5;
    expect(answer('acquired', 300, 1, 200).outcome).toBe('stepped');
    clock.time += 199;
    expect(answer('acquired', 300, 1, 200).outcome).toBe('stepped');
    clock.time += 2;
    expect(answer('acquired', 300, 1, 200).outcome).toBe('acquired');
    expect(steps).toHaveLength(1);
  });

  it('drift within the allowance over a long gap is no step; just beyond it is', () => {
    const gap = 60_000;
    answer('busy', 0, 0);
    clock.time += gap;
    const allowed = CLOCK_DRIFT_RATE * gap + CLOCK_SLACK;
    expect(answer('acquired', allowed - 1, 0).outcome).toBe('acquired');
    clock.time += gap;
    // Negative control of the threshold: the same check with a change just past what drift explains.
    expect(answer('acquired', allowed - 1 + CLOCK_DRIFT_RATE * gap + CLOCK_SLACK + 2, 0).outcome).toBe(
      'stepped',
    );
  });

  it('a slow answer widens its bracket but never turns a sane clock into a step', () => {
    answer('busy', 0, 1);
    for (let i = 0; i < 100; i++) {
      clock.time += 7;
      // The server read TIME anywhere inside a 400 ms round trip.
      const rtt = 400;
      const sent = clock.time - rtt;
      const time = EPOCH + sent + ((i * 37) % rtt);
      expect(clocks.judge('n1', { outcome: 'acquired', token: 0, time }, sent, 1_000).outcome).toBe(
        'acquired',
      );
    }
    expect(steps).toEqual([]);
  });

  it("a slow answer after a quick one does not blur the quick one's bracket: a later step is seen", () => {
    // Found by the simulation (clock-steps, seed 1968265680): a request queued 42 ms at a paused node became the
    // latest sample, and its 42 ms bracket hid a 17 ms forward step from the next quick answer.
    const run = (stepMs: number) => {
      answer('busy', 0, 0.2);
      clock.time += 3;
      const slowSent = clock.time;
      clock.time += 42;
      const slow = clocks.judge(
        'n1',
        { outcome: 'busy', holderTtl: 9, time: EPOCH + clock.time },
        slowSent,
        500,
      );
      clock.time += 10;
      return [slow.outcome, answer('acquired', stepMs, 0.2, 500).outcome];
    };
    expect(run(17)).toEqual(['busy', 'stepped']);
    expect(steps).toEqual([{ node: 'n1', step: expect.any(Number) }]);
    expect(steps[0].step).toBeGreaterThanOrEqual(17 - 2 * CLOCK_SLACK);
    // Negative control: the same answers without the step are no step.
    clocks = new NodeClocks(clock, new RedlockEvents());
    steps = [];
    expect(run(0)).toEqual(['busy', 'acquired']);
  });

  it('an answer to an older request is checked but does not replace the latest sample', () => {
    const oldSent = clock.time;
    clock.time += 50;
    answer('busy', 0, 1);
    // The older request's answer arrives later, from before a 500 ms forward step: consistent, no step.
    clock.time += 1;
    const old = clocks.judge(
      'n1',
      { outcome: 'busy', holderTtl: 1, time: EPOCH + oldSent + 1 },
      oldSent,
      1_000,
    );
    expect(old.outcome).toBe('busy');
    clock.time += 10;
    expect(answer('acquired', 500).outcome).toBe('stepped');
    expect(steps).toHaveLength(1);
  });

  it('refusals and answers without a time are passed through untouched', () => {
    answer('busy', 0);
    const refused = { outcome: 'refused', uptime: 5 } as const;
    expect(clocks.judge('n1', refused, clock.time, 1_000)).toBe(refused);
    const timeless = { outcome: 'acquired', token: 0 } as const;
    expect(clocks.judge('n1', timeless, clock.time, 1_000)).toBe(timeless);
    expect(clocks.report('n1')).toEqual({ sampleAge: 1 });
    expect(clocks.report('n2')).toBeUndefined();
  });
});
