import { AcquireAbortedError, RedlockClosedError, RedlockEventMap } from '../../lib';
import type { RedlockCore } from '../../lib/core';
import { Interval, findOverlaps, findStaleTokens } from '../safety/checkers/intervals';
import { deferred, modelCluster } from './model-nodes';

/**
 * The timing of lead() on a virtual clock over in-memory nodes that run the model of the scripts (moved from
 * leadership.spec.ts, where it slept on the real clock over real nodes): terms rotating one at a time, a
 * follower campaigning for as long as the leader's lease is renewed and taking over on its release, a
 * campaign stopped by a signal or by quit() while it is under way (its attempts seen on the nodes).
 */

/** Records the leadership events of an instance. */
function eventsOf(redlock: RedlockCore) {
  const seen: string[] = [];
  const push = (event: string) => (payload: RedlockEventMap['elected'] | RedlockEventMap['deposed']) =>
    seen.push(`${event}${'reason' in payload ? `:${payload.reason}` : ''}`);
  redlock.on('elected', push('elected'));
  redlock.on('deposed', push('deposed'));
  return seen;
}

/** Resolves once `signal` aborts. */
const aborted = (signal: AbortSignal) =>
  new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));

describe('leadership timing (virtual clock, in-memory model nodes)', () => {
  it('instances campaigning at once lead one at a time, each term with a larger fencing token', async () => {
    const { clock, rng, instance } = modelCluster(7);
    const instances = [0, 1, 2].map(() => instance({ ttl: 2_000 }));
    const sections: Interval[] = [];
    // Each instance leads three times in a row; every term works a random while (virtual), then steps down.
    const all = Promise.all(
      instances.map(async (redlock, id) => {
        for (let round = 0; round < 3; round++) {
          await redlock.lead('leader:rotation', async (lease) => {
            const start = clock.now();
            const work = deferred();
            clock.setTimeout(() => work.resolve(), 5 + rng.next() * 30);
            await work.promise;
            sections.push({
              resource: 'leader',
              holder: `i${id}`,
              start,
              end: clock.now(),
              token: lease.fencingToken,
            });
          });
        }
      }),
    );
    await clock.advance(60_000);
    await all;
    expect(sections).toHaveLength(9);
    expect(findOverlaps(sections)).toEqual([]);
    expect(findStaleTokens(sections)).toEqual([]);
    // Terms of different instances followed each other (not one instance's three terms, then the next's).
    expect(new Set(sections.slice(0, 3).map((s) => s.holder)).size).toBeGreaterThan(1);
    // Negative control of the checker: the same sections shifted to overlap are caught.
    const shifted = sections.map((s, i) => (i === 1 ? { ...s, start: sections[0].start } : s));
    expect(findOverlaps(shifted).length).toBeGreaterThan(0);
  });

  it('a follower waits as long as the leader leads (lease renewed past its ttl), and takes over when it steps down', async () => {
    const { clock, nodes, instance } = modelCluster();
    const [leader, follower] = [instance({ ttl: 300 }), instance({ ttl: 300 })];
    const events = eventsOf(follower);
    let stepDown!: () => void;
    let leaderWorks = false;
    const leading = leader.lead('leader:handover', (lease) => {
      leaderWorks = true;
      return new Promise<string>((r) => (stepDown = () => r(`A:${lease.signal.aborted}`)));
    });
    await clock.advance(0);
    expect(leaderWorks).toBe(true);
    let followerLed = false;
    const following = follower.lead('leader:handover', async () => {
      followerLed = true;
      return 'B';
    });
    await clock.advance(1_500); // five ttls of the lease
    expect(followerLed).toBe(false);
    expect(events).toEqual([]);
    // The follower was campaigning all along: refused on the nodes, again and again.
    for (const node of nodes) expect(node.acquires.get('i1')).toBeGreaterThan(2);
    stepDown();
    await clock.advance(10); // the release is announced: no need to wait for a ttl
    expect(await leading).toBe('A:false'); // the lease was never lost
    expect(followerLed).toBe(true);
    expect(await following).toBe('B');
    expect(events).toEqual(['elected', 'deposed:returned']);
    expect(follower.stats.wokenByRelease).toBeGreaterThanOrEqual(1);
  });

  it('a signal stops a campaign under way (AcquireAbortedError) and ends a term (lease.signal aborts, deposed: aborted)', async () => {
    const { clock, nodes, instance } = modelCluster();
    const [leader, follower] = [instance(), instance()];
    const events = eventsOf(leader);
    const stopLeading = new AbortController();
    const working = deferred();
    const leading = leader.lead(
      'leader:signal',
      async (lease) => {
        working.resolve();
        await aborted(lease.signal);
        return lease.signal.reason;
      },
      { signal: stopLeading.signal },
    );
    await clock.advance(0);
    await working.promise;
    const stopCampaign = new AbortController();
    const campaigning = follower
      .lead('leader:signal', async () => 'never', { signal: stopCampaign.signal })
      .catch((e: unknown) => e);
    await clock.advance(100);
    for (const node of nodes) expect(node.acquires.get('i1')).toBeGreaterThanOrEqual(1); // under way
    stopCampaign.abort(new Error('not needed'));
    await clock.advance(0);
    expect(await campaigning).toBeInstanceOf(AcquireAbortedError);
    const reason = new Error('maintenance');
    stopLeading.abort(reason);
    await clock.advance(0);
    expect(await leading).toBe(reason);
    expect(events).toEqual(['elected', 'deposed:aborted']);
  });

  it('quit() stops a campaign under way with RedlockClosedError', async () => {
    const { clock, nodes, instance } = modelCluster();
    const [leader, follower] = [instance(), instance()];
    const leadingDown = deferred();
    const leading = leader.lead('leader:quit', () => leadingDown.promise);
    await clock.advance(0);
    const campaigning = follower.lead('leader:quit', async () => 'never').catch((e: unknown) => e);
    await clock.advance(50);
    for (const node of nodes) expect(node.acquires.get('i1')).toBeGreaterThanOrEqual(1); // under way
    const quitting = follower.quit();
    await clock.advance(0);
    await quitting;
    expect(await campaigning).toBeInstanceOf(RedlockClosedError);
    leadingDown.resolve();
    await clock.advance(0);
    await leading;
  });
});
