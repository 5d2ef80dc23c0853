import {
  AcquireAbortedError,
  InvalidArgumentError,
  Lock,
  LockLostError,
  Redlock,
  RedlockClosedError,
  RedlockEventMap,
} from '../../lib';
import { Interval, findOverlaps, findStaleTokens } from '../safety/checkers/intervals';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';
import { keyWrittenOnQuorum } from './keyspace';
import { deferred } from './model-nodes';

/** Resolves once `signal` aborts. */
const aborted = (signal: AbortSignal) =>
  new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));

/** Records the leadership events of an instance. */
function eventsOf(redlock: Redlock) {
  const seen: (
    ({ event: 'elected' } & RedlockEventMap['elected']) | ({ event: 'deposed' } & RedlockEventMap['deposed'])
  )[] = [];
  redlock.on('elected', (payload) => seen.push({ event: 'elected', ...payload }));
  redlock.on('deposed', (payload) => seen.push({ event: 'deposed', ...payload }));
  return seen;
}

const one = async (): Promise<number> => 1;

describe('leadership: lead(name, work) over the quorum (3 real nodes)', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeAll });

  it('instances campaigning at once lead one at a time, each term with a larger fencing token', async () => {
    const instances = await Promise.all([0, 1, 2].map(() => redlockOn(redisNodes, { ttl: 2_000 })));
    // During every term an outsider tries to take the lease (the term's work: a round trip to the nodes).
    const outsider = await redlockOn(redisNodes);
    const intruders: Lock[] = [];
    const sections: Interval[] = [];
    const t0 = performance.now();
    // Each instance leads three times in a row; every term probes the nodes, then steps down.
    // (Terms working random virtual whiles: leadership-timing.spec.ts.)
    await Promise.all(
      instances.map(async (redlock, id) => {
        for (let round = 0; round < 3; round++) {
          await redlock.lead('leader:rotation', async (lease) => {
            const start = performance.now() - t0;
            const intruder = await outsider.tryAcquire('leader:rotation');
            if (intruder) intruders.push(intruder);
            const end = performance.now() - t0;
            sections.push({ resource: 'leader', holder: `i${id}`, start, end, token: lease.fencingToken });
          });
        }
      }),
    );
    expect(intruders.map((lock) => lock.value)).toEqual([]);
    expect(sections).toHaveLength(9);
    expect(findOverlaps(sections)).toEqual([]);
    expect(findStaleTokens(sections)).toEqual([]);
    // Negative control of the checker: the same sections shifted to overlap are caught.
    const shifted = sections.map((s, i) => (i === 1 ? { ...s, start: sections[0].start } : s));
    expect(findOverlaps(shifted).length).toBeGreaterThan(0);
  });

  it('a lost lease aborts lease.signal; once work stops, the instance campaigns again (new term, larger token)', async () => {
    const redlock = await redlockOn(redisNodes, { ttl: 300 });
    const events = eventsOf(redlock);
    const leases: Lock[] = [];
    const value = await redlock.lead('leader:lost', async (lease) => {
      leases.push(lease);
      if (leases.length === 1) {
        // The lease's keys vanish everywhere (as after empty restarts): the next renewal finds no quorum.
        await redisNodes.flushAll();
        await aborted(lease.signal);
        expect(lease.signal.reason).toBeInstanceOf(LockLostError);
        return 'stepped down';
      }
      return 'second term';
    });
    expect(value).toBe('second term');
    expect(leases).toHaveLength(2);
    expect(leases[1].fencingToken!).toBeGreaterThan(leases[0].fencingToken!);
    expect(events.map((e) => [e.event, e.term, 'reason' in e ? e.reason : e.fencingToken])).toEqual([
      ['elected', 1, leases[0].fencingToken],
      ['deposed', 1, 'lost'],
      ['elected', 2, leases[1].fencingToken],
      ['deposed', 2, 'returned'],
    ]);
  });

  it('recampaign: false rejects with the loss once work settles', async () => {
    const redlock = await redlockOn(redisNodes, { ttl: 300 });
    let terms = 0;
    const error = await redlock
      .lead(
        'leader:once',
        async (lease) => {
          terms++;
          await redisNodes.flushAll();
          await aborted(lease.signal);
        },
        { recampaign: false },
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect(terms).toBe(1);
  });

  it("work's own error passes through unchanged (term deposed as failed) and the lease is released", async () => {
    const redlock = await redlockOn(redisNodes);
    const events = eventsOf(redlock);
    const boom = new Error('boom');
    await expect(
      redlock.lead('leader:fails', async () => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(events.map((e) => e.event + ('reason' in e ? `:${e.reason}` : ''))).toEqual([
      'elected',
      'deposed:failed',
    ]);
    const other = await redlockOn(redisNodes);
    expect(await other.tryAcquire('leader:fails')).not.toBeNull();
  });

  /**
   * `campaign()` under way on the real nodes: resolves once the campaigner was refused on a quorum, seen as its
   * intent key written there (a waiting writer's, and lead() campaigns as one), or once it settled.
   */
  async function refusedOnQuorum<T>(
    name: string,
    campaign: () => Promise<T>,
  ): Promise<{ campaigning: Promise<T> }> {
    const refused = await keyWrittenOnQuorum(redisNodes, `redlock:{${name}}:intent`);
    const campaigning = campaign();
    try {
      await Promise.race([refused.written, campaigning.catch(() => undefined)]);
    } finally {
      await refused.stop();
    }
    return { campaigning };
  }

  // How long a follower waits (its lease renewed past the ttl) and its attempts meanwhile, on the virtual
  // clock: leadership-timing.spec.ts.
  it('a follower waits as long as the leader leads, and takes over when it steps down', async () => {
    const [leader, follower] = await Promise.all([redlockOn(redisNodes), redlockOn(redisNodes)]);
    const working = deferred<() => void>();
    const leading = leader.lead(
      'leader:handover',
      () => new Promise<string>((r) => working.resolve(() => r('A'))),
    );
    const stepDown = await working.promise; // the leader works
    const elected = eventsOf(follower);
    let followerLed = false;
    const { campaigning: following } = await refusedOnQuorum('leader:handover', () =>
      follower.lead('leader:handover', async () => {
        followerLed = true;
        return 'B';
      }),
    );
    expect(followerLed).toBe(false); // campaigning: refused on a quorum
    stepDown();
    expect(await leading).toBe('A');
    expect(await following).toBe('B');
    expect(elected.map((e) => e.event)).toEqual(['elected', 'deposed']);
  });

  it('a signal stops campaigning (AcquireAbortedError) and ends a term (lease.signal aborts, deposed: aborted)', async () => {
    const [leader, follower] = await Promise.all([redlockOn(redisNodes), redlockOn(redisNodes)]);
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
    await working.promise;
    const stopCampaign = new AbortController();
    const { campaigning } = await refusedOnQuorum('leader:signal', () =>
      follower.lead('leader:signal', async () => 'never', { signal: stopCampaign.signal }),
    );
    stopCampaign.abort(new Error('not needed'));
    expect(await campaigning.catch((e: unknown) => e)).toBeInstanceOf(AcquireAbortedError);
    const reason = new Error('maintenance');
    stopLeading.abort(reason);
    expect(await leading).toBe(reason);
    expect(events.map((e) => e.event + ('reason' in e ? `:${e.reason}` : ''))).toEqual([
      'elected',
      'deposed:aborted',
    ]);
  });

  it('quit() stops a campaign with RedlockClosedError', async () => {
    const [leader, follower] = await Promise.all([redlockOn(redisNodes), redlockOn(redisNodes)]);
    const working = deferred<() => void>();
    const leading = leader.lead('leader:quit', () => new Promise<void>((r) => working.resolve(r)));
    const stepDown = await working.promise;
    const { campaigning } = await refusedOnQuorum('leader:quit', () =>
      follower.lead('leader:quit', async () => 'never'),
    );
    await follower.quit();
    expect(await campaigning.catch((e: unknown) => e)).toBeInstanceOf(RedlockClosedError);
    stepDown();
    await leading;
  });

  it.each([
    ['a name that is not a string', 42, one, undefined, /lead\(\) needs the name/],
    ['an empty name', '', one, undefined, /lead\(\) needs the name/],
    ['work that is not a function', 'x', 'work', undefined, /lead\(\) needs the work/],
    [
      'a misspelt option',
      'x',
      one,
      { recampain: false },
      /Unknown lead\(\) option "recampain".*"recampaign"/,
    ],
    ['recampaign not a boolean', 'x', one, { recampaign: 'no' }, /recampaign must be true or false/],
    ['a bad ttl', 'x', one, { ttl: -1 }, /ttl must be a positive whole number/],
    ['a signal that is not an AbortSignal', 'x', one, { signal: 'stop' }, /signal must be an AbortSignal/],
  ])('refuses %s before any traffic', async (_, name, work, options, message) => {
    const redlock = await redlockOn(redisNodes);
    const events = eventsOf(redlock);
    const call = (redlock.lead as (...args: unknown[]) => Promise<unknown>).bind(redlock);
    const error = await call(name, work, options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(message);
    expect(events).toEqual([]);
  });
});
