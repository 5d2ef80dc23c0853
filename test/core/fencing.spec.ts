import { Lock, Redlock } from '../../lib';
import { FencedRegister } from '../safety/checkers/fenced-register';
import { Interval, findStaleTokens } from '../safety/checkers/intervals';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';

describe('fencing tokens (5 real nodes)', () => {
  const nodes = useRedisNodes(5, {
    afterEach: async () => {
      for (const node of nodes.nodes) {
        if (node.paused) await node.resume();
        if (!node.running) await node.start();
      }
    },
    afterAll: closeAll,
    flushAfterEach: false,
  });
  let redlock: Redlock;

  beforeAll(async () => {
    redlock = await redlockOn(nodes, { fencing: true });
  });

  it('are absent without fencing and numbers with it', async () => {
    const plain = await redlockOn(nodes);
    const unfenced = await plain.acquire('plain');
    expect(unfenced.fencingToken).toBeUndefined();
    await unfenced.release();
    const fenced = await redlock.acquire('plain');
    expect(Number.isSafeInteger(fenced.fencingToken)).toBe(true);
    await fenced.release();
  });

  it('strictly increase across holders forced onto different quorums (2 of 5 nodes paused, a new pair each time)', async () => {
    const sections: Interval[] = [];
    const pairs = [
      [0, 1],
      [2, 3],
      [4, 0],
      [1, 3],
      [2, 4],
      [0, 3],
      [1, 4],
      [0, 2],
    ];
    for (let round = 0; round < 24; round++) {
      const pair = pairs[round % pairs.length];
      for (const i of pair) await nodes.nodes[i].pause();
      const lock = await redlock.acquire('ledger', { wait: 2_000 });
      sections.push({
        resource: 'ledger',
        holder: `round-${round}`,
        start: round,
        end: round,
        token: lock.fencingToken,
      });
      await lock.release();
      for (const i of pair) await nodes.nodes[i].resume();
    }
    expect(sections.every((s) => s.token !== undefined)).toBe(true);
    expect(findStaleTokens(sections)).toEqual([]);
  });

  it('negative control: the token checker reports a token that did not increase', () => {
    const stale = findStaleTokens([
      { resource: 'r', holder: 'a', start: 0, end: 1, token: 10 },
      { resource: 'r', holder: 'b', start: 2, end: 3, token: 12 },
      { resource: 'r', holder: 'c', start: 4, end: 5, token: 12 },
      { resource: 'other', holder: 'd', start: 6, end: 7, token: 1 },
    ]);
    expect(stale.map((s) => s.holder)).toEqual(['c']);
  });

  it('do not go back after nodes restart empty (counters lost)', async () => {
    const first = await redlock.acquire('counter-loss');
    await first.release();
    for (const i of [0, 1, 2]) await nodes.nodes[i].restartEmpty();
    const second = await redlock.acquire('counter-loss', { wait: 2_000 });
    await second.release();
    expect(second.fencingToken!).toBeGreaterThan(first.fencingToken!);
  });

  it('a zombie holder paused past its ttl is rejected by the resource while the new holder writes', async () => {
    const register = new FencedRegister<string>();
    const zombie = await redlock.acquire('account:7', { ttl: 300 });
    expect(register.write(zombie.fencingToken!, 'zombie: first write')).toBe(true);
    // The zombie "pauses" (GC, SIGSTOP) past its ttl without renewing: the successor waits until its keys
    // expired (the acquisition's own wait, woken by the holder's ttl).
    const successor: Lock = await redlock.acquire('account:7', { ttl: 5_000, wait: 2_000 });
    expect(zombie.remainingTime).toBeLessThanOrEqual(0);
    expect(successor.fencingToken!).toBeGreaterThan(zombie.fencingToken!);
    expect(register.write(successor.fencingToken!, 'successor')).toBe(true);

    expect(register.write(zombie.fencingToken!, 'zombie: stale write')).toBe(false);
    expect(register.value).toBe('successor');
    expect(register.rejected).toEqual([{ token: zombie.fencingToken, value: 'zombie: stale write' }]);
    await successor.release();
  });

  it('multi-resource locks carry one token that is larger than any earlier token of each resource', async () => {
    const a = await redlock.acquire('pair:a');
    await a.release();
    const b = await redlock.acquire('pair:b');
    await b.release();
    const both = await redlock.acquire(['pair:a', 'pair:b']);
    await both.release();
    expect(both.fencingToken!).toBeGreaterThan(Math.max(a.fencingToken!, b.fencingToken!));
    const again = await redlock.acquire('pair:a');
    await again.release();
    expect(again.fencingToken!).toBeGreaterThan(both.fencingToken!);
  });
});
