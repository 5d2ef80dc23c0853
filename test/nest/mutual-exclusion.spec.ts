import { INestApplication, Injectable } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { Locked, RedlockModule, RedlockService } from '../../lib';
import { Interval, findOverlaps } from '../safety/checkers/intervals';
import { RedisNodes, useRedisNodes } from '../support';
import { TEST_OPTIONS, closeApps, createApp, keyOf, valuesOnNodes } from './helpers';

/** Shared by every application in this process, like a database all instances write to. */
const intervals: Interval[] = [];
/** Per section, the lock it ran under and what every node held for its key meanwhile. */
const seenOnNodes: { lock: string; values: (string | null | undefined)[] }[] = [];
/** The nodes, read by each section (set once they are started). */
let ledgerNodes: RedisNodes;

@Injectable()
class Ledger {
  /** Set per application, to name the holder of each section. */
  name = '';
  constructor(readonly redlock: RedlockService) {}

  @Locked('ledger:<0>', { wait: 20_000 })
  async post(account: string) {
    await this.section(account);
  }

  /** The same work without the decorator: the negative control. */
  async postUnlocked(account: string) {
    await this.section(account);
  }

  private async section(account: string) {
    // The lock this section runs under came from this application's own service.
    const lock = this.redlock.current();
    const start = performance.now();
    // The section's work: a round trip to every node, reading the lock's key (no timer: real I/O).
    const values = await valuesOnNodes(ledgerNodes, keyOf(`ledger:${account}`));
    seenOnNodes.push({ lock: lock?.value ?? 'unlocked', values });
    intervals.push({
      resource: account,
      holder: `${this.name}/${lock?.value ?? 'unlocked'}`,
      start,
      end: performance.now(),
    });
  }
}

describe('@Locked across three applications in one process (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeApps, flushAfterEach: false });
  let apps: INestApplication[];

  beforeAll(async () => {
    ledgerNodes = nodes;
    apps = [];
    for (const name of ['a', 'b', 'c']) {
      const app = await createApp({
        imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
        providers: [Ledger],
      });
      app.get(Ledger).name = name;
      apps.push(app);
    }
  });
  beforeEach(() => {
    intervals.length = 0;
    seenOnNodes.length = 0;
  });

  it('each application uses its own RedlockService', () => {
    const services = apps.map((app) => app.get(RedlockService));
    expect(new Set(services).size).toBe(3);
    apps.forEach((app, i) => expect(app.get(Ledger).redlock).toBe(services[i]));
  });

  it('concurrent calls of the same decorated method never overlap', async () => {
    const calls = apps.flatMap((app) => Array.from({ length: 8 }, () => app.get(Ledger).post('shared')));
    await Promise.all(calls);
    expect(intervals).toHaveLength(24);
    expect(intervals.every((interval) => !interval.holder.endsWith('/unlocked'))).toBe(true);
    // Every application ran sections: the lock was contended across applications, not within one.
    expect(new Set(intervals.map((interval) => interval.holder.split('/')[0]))).toEqual(
      new Set(['a', 'b', 'c']),
    );
    expect(findOverlaps(intervals)).toEqual([]);
    // And inside each section a majority of the nodes held the key for that section's own lock (the third
    // may still be finishing an earlier holder's release: releases and acquisitions resolve at a quorum).
    expect(seenOnNodes).toHaveLength(24);
    for (const { lock, values } of seenOnNodes) {
      expect(values.filter((value) => value === lock).length).toBeGreaterThanOrEqual(2);
    }
  });

  it('negative control: the same workload without @Locked overlaps, and the checker sees it', async () => {
    const calls = apps.flatMap((app) =>
      Array.from({ length: 8 }, () => app.get(Ledger).postUnlocked('shared')),
    );
    await Promise.all(calls);
    expect(intervals).toHaveLength(24);
    expect(findOverlaps(intervals).length).toBeGreaterThan(0);
  });
});
