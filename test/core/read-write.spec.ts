import { InvalidArgumentError, Lock, LockBusyError, Redlock } from '../../lib';
import { Interval, findExclusionViolations, findStaleTokens } from '../safety/checkers/intervals';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn, valuesOnNodes } from './helpers';

type Section = Interval & { readonly mode: 'read' | 'write' };

describe('read-write locks: { mode: "read" | "write" } over the quorum (3 real nodes)', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeAll });

  /**
   * Workers on several instances reading or writing one resource; during each section the work is a probe: an
   * outsider's tryAcquire of the other mode, which must be refused (a writer excludes readers, readers a
   * writer). Sections working random whiles (readers seen sharing): read-write-timing.spec.ts.
   */
  async function mixed(instances: readonly Redlock[], readShare: number, rounds: number) {
    const outsider = await redlockOn(redisNodes);
    const intruders: Lock[] = [];
    const sections: Section[] = [];
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: instances.length * 3 }, async (_, worker) => {
        const redlock = instances[worker % instances.length];
        for (let round = 0; round < rounds; round++) {
          const mode = Math.random() < readShare ? 'read' : 'write';
          await redlock.using('rw:doc', { mode, wait: 10_000, fencing: true }, async (lock: Lock) => {
            const start = performance.now() - t0;
            const other = mode === 'read' ? 'write' : 'read';
            const intruder = await outsider.tryAcquire('rw:doc', { mode: other });
            if (intruder) intruders.push(intruder);
            const end = performance.now() - t0;
            sections.push({
              resource: 'rw:doc',
              holder: `w${worker}`,
              start,
              end,
              token: lock.fencingToken,
              mode,
            });
          });
        }
      }),
    );
    return { sections, intruders };
  }

  it('readers share, writers are alone: no writer overlaps anyone; writer tokens exceed every earlier token', async () => {
    const instances = await Promise.all([0, 1, 2].map(() => redlockOn(redisNodes)));
    const { sections, intruders } = await mixed(instances, 0.7, 6);
    expect(sections.length).toBe(54);
    expect(intruders.map((lock) => `${lock.mode}:${lock.value}`)).toEqual([]);
    expect(findExclusionViolations(sections)).toEqual([]);
    // Both modes ran.
    expect(sections.some((s) => s.mode === 'read')).toBe(true);
    expect(sections.some((s) => s.mode === 'write')).toBe(true);
    // A writer's token is larger than the token of every section that began before it, a reader's than every
    // earlier writer's (findStaleTokens, in start order; no writer overlaps, so "began before" is "ended before").
    expect(findStaleTokens(sections)).toEqual([]);
  });

  it('negative control: the checkers flag a writer overlapping a reader, and tokens out of read-write order', () => {
    const reader: Section = { resource: 'x', holder: 'r', start: 0, end: 10, mode: 'read' };
    const otherReader: Section = { resource: 'x', holder: 'r2', start: 5, end: 12, mode: 'read' };
    const writer: Section = { resource: 'x', holder: 'w', start: 9, end: 20, mode: 'write' };
    expect(findExclusionViolations([reader, otherReader])).toEqual([]);
    expect(findExclusionViolations([reader, otherReader, writer]).length).toBe(2);
    expect(findExclusionViolations([writer, { ...writer, holder: 'w2', start: 19 }]).length).toBe(1);
    // Tokens: concurrent readers are not ordered; a reader after a writer, or a writer after anyone, is.
    const tokened = (section: Section, token: number): Section => ({ ...section, token });
    expect(findStaleTokens([tokened(reader, 5), tokened(otherReader, 3)])).toEqual([]);
    expect(findStaleTokens([tokened(writer, 9), { ...tokened(reader, 8), start: 21, end: 30 }]).length).toBe(
      1,
    );
    expect(findStaleTokens([tokened(reader, 5), { ...tokened(writer, 4), start: 13 }]).length).toBe(1);
  });

  it('a reader is refused while a writer holds it, and a writer while readers do', async () => {
    const [a, b] = await Promise.all([redlockOn(redisNodes), redlockOn(redisNodes)]);
    const writer = await a.acquire('rw:x');
    expect(writer.mode).toBe('write');
    expect(await b.tryAcquire('rw:x', { mode: 'read' })).toBeNull();
    await writer.release();
    const readers = await Promise.all([
      b.acquire('rw:x', { mode: 'read' }),
      a.acquire('rw:x', { mode: 'read' }),
    ]);
    expect(readers.map((lock) => lock.mode)).toEqual(['read', 'read']);
    const busy = await a.acquire('rw:x', { wait: 50 }).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(LockBusyError);
    const busyVotes = (busy as LockBusyError).votes.filter((vote) => vote.outcome === 'busy');
    expect(busyVotes.length).toBeGreaterThanOrEqual(2);
    expect(busyVotes.every((vote) => vote.readers === true)).toBe(true);
    expect((busy as Error).message).toMatch(/held by readers/);
    await Promise.all(readers.map((lock) => lock.release()));
    await (await a.acquire('rw:x', { wait: 0 })).release();
  });

  // A waiting writer's intent against a stream of readers (and its negative control), and a reader renewed past
  // its ttl in using(): read-write-timing.spec.ts (virtual clock).
  it('a reader expires on the servers when its holder crashes, and is released by owner', async () => {
    const redlock = await redlockOn(redisNodes, { ttl: 300 });
    const crashed = await redlockOn(redisNodes);
    const held = await crashed.acquire('rw:crash', { mode: 'read', ttl: 300 });
    const scores = await Promise.all(
      redisNodes.nodes.map(async (node) => {
        const admin = node.redis();
        try {
          return await admin.zscore('redlock:{rw:crash}:readers', held.value);
        } finally {
          admin.disconnect();
        }
      }),
    );
    expect(scores.every((score) => score !== null)).toBe(true);
    await crashed.quit(); // never released
    const writer = await redlock.acquire('rw:crash', { wait: 2_000 });
    expect(await valuesOnNodes(redisNodes, 'redlock:{rw:crash}')).toEqual([
      writer.value,
      writer.value,
      writer.value,
    ]);
    await writer.release();
  });

  it('refuses a bad mode and mode read with permits, before any traffic', async () => {
    const redlock = await redlockOn(redisNodes);
    await expect(redlock.acquire('rw:bad', { mode: 'shared' as never })).rejects.toThrow(
      /mode must be 'read' or 'write', got "shared"/,
    );
    await expect(redlock.acquire('rw:bad', { mode: 'read', permits: 2 })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
  });
});
