/**
 * Jest's test order: the files that take longest (mostly waiting on real time or on child processes) start
 * first, so that none of them starts last and leaves one worker alone at the end of the run; the rest follow in
 * Jest's own order (its timing cache when there is one, file size on a fresh clone).
 */
const Sequencer = require('@jest/test-sequencer').default;

const LONGEST_FIRST = [
  'test/safety/sim/sim.spec.ts',
  'test/safety/chaos/chaos.spec.ts',
  'test/safety/clock-steps/clock-steps.spec.ts',
  'test/bench/bench-smoke.spec.ts',
  'test/docs/quick-start.spec.ts',
  'test/locked/scheduled-ticks.spec.ts',
  'test/package/packed.spec.ts',
];

class LongestFirst extends Sequencer {
  sort(tests) {
    const rank = (test) => {
      const index = LONGEST_FIRST.findIndex((file) => test.path.endsWith(file));
      return index === -1 ? LONGEST_FIRST.length : index;
    };
    const ordered = super.sort(tests);
    return [...ordered].sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = LongestFirst;
