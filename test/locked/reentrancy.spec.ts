import { Injectable } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { InvalidArgumentError, Lock, LockBusyError, Locked, RedlockModule, RedlockService } from '../../lib';
import { Interval, findOverlaps } from '../safety/checkers/intervals';
import { useRedisNodes } from '../support';
import { TEST_OPTIONS, closeApps, createApp, gate, keyOf, valuesOnNodes } from '../nest/helpers';

@Injectable()
class Accounts {
  readonly intervals: Interval[] = [];
  constructor(readonly redlock: RedlockService) {}

  @Locked('account:<0>')
  async outer(id: string, inner: (self: Accounts, outerLock: Lock) => Promise<unknown>) {
    return inner(this, this.redlock.current()!);
  }

  // One attempt only: had it tried to acquire what its caller holds, it would fail at once.
  @Locked('account:<0>', { wait: 0 })
  async inner(id: string) {
    return this.redlock.current();
  }

  @Locked(['account:<0>', 'account:<1>'], { wait: 0 })
  async both(a: string, b: string, during?: () => Promise<unknown>) {
    return [this.redlock.current(), await during?.()];
  }

  @Locked('account:<0>', { wait: 5_000 })
  async section(id: string, holder: string, work: () => Promise<unknown>) {
    const start = performance.now();
    await work();
    this.intervals.push({ resource: id, holder, start, end: performance.now() });
  }
}

describe('reentrancy and the lock context (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeApps });
  let accounts: Accounts;
  let redlock: RedlockService;

  beforeAll(async () => {
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [Accounts],
    });
    accounts = app.get(Accounts);
    redlock = app.get(RedlockService);
  });

  it('a locked method calling another on the same resource proceeds without acquiring again', async () => {
    const [outerLock, innerLock] = (await accounts.outer('1', async (self, outerLock) => [
      outerLock,
      await self.inner('1'),
    ])) as Lock[];
    expect(innerLock).toBe(outerLock);
    expect(outerLock.isReleased).toBe(true);
  });

  it('using() inside a locked method is reentrant too, and nests', async () => {
    const result = await accounts.outer('2', (_, outerLock) =>
      redlock.using('account:2', { wait: 0 }, async (lock) =>
        redlock.using(['account:2'], async (again) => [lock === outerLock, again === outerLock]),
      ),
    );
    expect(result).toEqual([true, true]);
  });

  it('concurrent independent calls are not mistaken for reentrant ones: they exclude each other', async () => {
    // Each section's work: a round trip to every node, reading the key (no timer: real I/O takes the time).
    const work = () => valuesOnNodes(nodes, keyOf('account:3'));
    await Promise.all(['a', 'b', 'c'].map((holder) => accounts.section('3', holder, work)));
    const intervals = accounts.intervals.filter((interval) => interval.resource === '3');
    expect(intervals).toHaveLength(3);
    expect(findOverlaps(intervals)).toEqual([]);
  });

  it('holding A and asking for A and B acquires only B, within the same call chain', async () => {
    const [outerLock, [innerLock, duringInner]] = (await accounts.outer('4', async (self, outerLock) => [
      outerLock,
      await self.both('4', '5', async () => [
        await valuesOnNodes(nodes, keyOf('account:4')),
        await valuesOnNodes(nodes, keyOf('account:5')),
      ]),
    ])) as [Lock, [Lock, (string | null)[][]]];
    expect(outerLock.resources).toEqual(['account:4']);
    expect(innerLock).not.toBe(outerLock);
    expect(innerLock.resources).toEqual(['account:5']);
    const [onA, onB] = duringInner;
    expect(onA).toEqual([outerLock.value, outerLock.value, outerLock.value]);
    expect(onB).toEqual([innerLock.value, innerLock.value, innerLock.value]);
    expect(innerLock.isReleased && outerLock.isReleased).toBe(true);
  });

  it('B released when the inner section ends, A only when the outer one does', async () => {
    const states = await accounts.outer('6', async (self) => {
      await self.both('6', '7');
      return [await valuesOnNodes(nodes, keyOf('account:6')), await valuesOnNodes(nodes, keyOf('account:7'))];
    });
    const [duringA, afterB] = states as (string | null)[][];
    expect(duringA.every((value) => value !== null)).toBe(true);
    expect(afterB).toEqual([null, null, null]);
    expect(await valuesOnNodes(nodes, keyOf('account:6'))).toEqual([null, null, null]);
  });

  it('current(): undefined outside, the innermost lock inside, undefined again after', async () => {
    expect(redlock.current()).toBeUndefined();
    const seen = await redlock.using('c:outer', async (outerLock) => {
      const inner = await redlock.using('c:inner', async (innerLock) => [redlock.current(), innerLock]);
      return [redlock.current() === outerLock, inner[0] === inner[1], inner[1] !== outerLock];
    });
    expect(seen).toEqual([true, true, true]);
    expect(redlock.current()).toBeUndefined();
  });

  it('acquire() of a resource the chain holds is refused at once instead of waiting for itself', async () => {
    const error = await accounts
      .outer('8', () => redlock.acquire('account:8', { wait: 10_000 }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(/^"account:8" is already held by this call chain/);
  });

  it('work that outlives its section is not reentrant: it takes its own lock', async () => {
    let later: Promise<unknown> | undefined;
    const outerDone = gate();
    const outerLock = (await accounts.outer('9', async (self, lock) => {
      // Fire-and-forget, scheduled inside the section (its context), run once the outer call released.
      later = outerDone.promise.then(() => self.inner('9'));
      return lock;
    })) as Lock;
    expect(outerLock.isReleased).toBe(true);
    outerDone.open();
    const innerLock = (await later) as Lock;
    expect(outerLock.isReleased).toBe(true);
    expect(innerLock).not.toBe(outerLock);
    expect(innerLock.resources).toEqual(['account:9']);
  });

  it("another application's lock context does not count: its locks are other owners", async () => {
    const other = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [Accounts],
    });
    const error = await accounts.outer('10', () => other.get(Accounts).inner('10')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBusyError);
    expect(other.get(RedlockService).current()).toBeUndefined();
  });
});
