import type { NodeVote } from '../../lib';
import { quorumFreeIn } from '../../lib/core/acquire/retry';

const busy = (node: string, holderTtl: number): NodeVote => ({ node, outcome: 'busy', holderTtl });
const yes = (node: string): NodeVote => ({ node, outcome: 'acquired' });

/**
 * Issue "clock steps", part 1: a waiter retries when a quorum's copies of the lock can have expired — the
 * (quorum − free)-th smallest holder ttl — not when the first node's does (after a forward step of one node's
 * clock, that node's copy expires early, and retrying then wins a quorum with its vote).
 */
describe('when a busy lock can be free on a quorum', () => {
  it('five nodes, all busy: the third smallest ttl (a stepped node that expires at once does not decide)', () => {
    const votes = [busy('a', 4), busy('b', 900), busy('c', 950), busy('d', 1_000), busy('e', 980)];
    expect(quorumFreeIn(votes, 3)).toBe(950);
    // The control: the smallest ttl is what a waiter used before, and would retry at 4 ms.
    expect(Math.min(...votes.map((v) => v.holderTtl!))).toBe(4);
  });

  it('nodes that said yes count as free: one yes of three, a quorum of two needs one more', () => {
    expect(quorumFreeIn([yes('a'), busy('b', 300), busy('c', 200)], 2)).toBe(200);
    expect(quorumFreeIn([yes('a'), yes('b'), busy('c', 200), busy('d', 700), busy('e', 800)], 3)).toBe(200);
  });

  it('unknown: too few busy nodes with a ttl to make a quorum (the rest failed, or hold keys without expiry)', () => {
    const failed: NodeVote = { node: 'c', outcome: 'timeout' };
    expect(quorumFreeIn([busy('a', 100), failed, { node: 'b', outcome: 'error' }], 2)).toBeUndefined();
    expect(quorumFreeIn([busy('a', 100), busy('b', -1), failed], 2)).toBeUndefined();
  });
});
