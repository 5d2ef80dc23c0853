import { Injectable } from '@nestjs/common';
import { Observable, Subject, firstValueFrom, interval, lastValueFrom, map, take, toArray } from 'rxjs';
import { LockBusyError, Locked, RedlockModule, RedlockService } from '../../lib';
import { RedisNodes, useRedisNodes } from '../support';
import { TEST_OPTIONS, closeApps, createApp, keyOf, valuesOnNodes } from './helpers';
import { keyOnEveryNode } from './key-states';

@Injectable()
class Feeds {
  calls = 0;
  constructor(readonly redlock: RedlockService) {}

  @Locked('feed:<0>')
  ticks(id: string, count: number): Observable<string | undefined> {
    this.calls++;
    return interval(20).pipe(
      take(count),
      map(() => this.redlock.current()?.value),
    );
  }

  @Locked('feed:<0>')
  endless(id: string): Observable<number> {
    return interval(10);
  }

  @Locked('feed:<0>')
  relay(id: string, source: Subject<number>): Observable<number> {
    return source;
  }

  @Locked('feed:<0>', { onBusy: 'skip' })
  skippable(id: string): Observable<number> {
    this.calls++;
    return interval(10).pipe(take(1));
  }

  @Locked('feed:<0>', { wait: 0 })
  once(id: string): Observable<number> {
    return interval(10).pipe(take(1));
  }
}

const held = async (nodes: RedisNodes, id: string) =>
  (await valuesOnNodes(nodes, keyOf(`feed:${id}`))).every((value) => value !== null);
const free = async (nodes: RedisNodes, id: string) =>
  (await valuesOnNodes(nodes, keyOf(`feed:${id}`))).every((value) => value === null);
/** Resolves once the feed's key is held (or free) on every node: the nodes' keyspace notifications, no polling. */
const until = (nodes: RedisNodes, id: string, state: 'held' | 'free') =>
  keyOnEveryNode(nodes, keyOf(`feed:${id}`), state);

describe('@Locked on Observable methods (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeApps });
  let feeds: Feeds;
  let redlock: RedlockService;

  beforeAll(async () => {
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [Feeds],
    });
    feeds = app.get(Feeds);
    redlock = app.get(RedlockService);
  });
  beforeEach(() => {
    feeds.calls = 0;
  });

  it('acquires on subscribe, not on call (and runs the method then)', async () => {
    const feed = feeds.ticks('1', 3);
    expect(feeds.calls).toBe(0);
    expect(await free(nodes, '1')).toBe(true);
    const values = await lastValueFrom(feed.pipe(toArray()));
    expect(feeds.calls).toBe(1);
    // Emissions ran in the lock context: every one saw the same lock.
    expect(values).toHaveLength(3);
    expect(new Set(values).size).toBe(1);
    expect(values[0]).toEqual(expect.any(String));
  });

  it('holds the lock until the source completes, and releases it before completing', async () => {
    const source = new Subject<number>();
    const received: number[] = [];
    let completedWhileFree: boolean | undefined;
    const done = new Promise<void>((resolve) =>
      feeds.relay('2', source).subscribe({
        next: (value) => received.push(value),
        complete: () => void free(nodes, '2').then((isFree) => ((completedWhileFree = isFree), resolve())),
      }),
    );
    await until(nodes, '2', 'held');
    expect(await held(nodes, '2')).toBe(true);
    source.next(1);
    source.next(2);
    expect(await held(nodes, '2')).toBe(true); // still held between emissions
    source.complete();
    await done;
    expect(received).toEqual([1, 2]);
    expect(completedWhileFree).toBe(true);
  });

  it('releases on unsubscribe', async () => {
    const subscription = feeds.endless('3').subscribe();
    await until(nodes, '3', 'held');
    expect(await held(nodes, '3')).toBe(true);
    subscription.unsubscribe();
    await until(nodes, '3', 'free');
    expect(await free(nodes, '3')).toBe(true);
  });

  it('unsubscribing while the lock is still being acquired releases it as soon as it arrives', async () => {
    const seen: string[] = [];
    const mine = (resources: readonly string[]) => resources.includes('feed:4');
    const offAcquired = redlock.on('acquired', (e) => void (mine(e.resources) && seen.push('acquired')));
    let releasedOnce!: () => void;
    const released = new Promise<void>((resolve) => (releasedOnce = resolve));
    const offReleased = redlock.on('released', (e) => {
      if (!mine(e.resources)) return;
      seen.push('released');
      releasedOnce();
    });
    try {
      const subscription = feeds.endless('4').subscribe();
      subscription.unsubscribe(); // synchronously: the acquisition is in flight
      // The lock arrived after the unsubscribe, and was released at once...
      await released;
      await until(nodes, '4', 'free');
      // ...and it stays free: nothing subscribed to the source under a lock that nobody releases.
      expect(await free(nodes, '4')).toBe(true);
      expect(seen).toEqual(['acquired', 'released']);
    } finally {
      offAcquired();
      offReleased();
    }
  });

  it("passes the source's error through unchanged after releasing", async () => {
    const source = new Subject<number>();
    const failure = new Error('feed broke');
    const outcome = lastValueFrom(feeds.relay('5', source)).catch((e: unknown) => e);
    await until(nodes, '5', 'held');
    expect(await held(nodes, '5')).toBe(true);
    source.error(failure);
    expect(await outcome).toBe(failure);
    expect(await free(nodes, '5')).toBe(true);
  });

  it("busy: errors with LockBusyError, or completes empty with onBusy 'skip' without calling the method", async () => {
    const lock = await redlock.acquire('feed:6');
    await expect(lastValueFrom(feeds.once('6'))).rejects.toBeInstanceOf(LockBusyError);
    await expect(firstValueFrom(feeds.skippable('6'), { defaultValue: 'empty' })).resolves.toBe('empty');
    expect(feeds.calls).toBe(0);
    await redlock.release(lock);
    await expect(firstValueFrom(feeds.skippable('6'))).resolves.toBe(0);
  });

  it('two subscriptions are two lock holders: the second waits for the first', async () => {
    const order: string[] = [];
    const first = lastValueFrom(feeds.ticks('7', 3)).then(() => order.push('first'));
    const second = lastValueFrom(feeds.ticks('7', 1)).then(() => order.push('second'));
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
  });
});
