import { InvalidArgumentError, Lock, LockBusyError, Redlock } from '../../lib';
import { Interval, findExclusionViolations, findStaleTokens } from '../safety/checkers/intervals';
import { useRedisNodes } from '../support';
import { closeAll, delay, eventually, redlockOn, valuesOnNodes } from './helpers';

type Section = Interval & { readonly mode: 'read' | 'write' };

describe('read-write locks: { mode: "read" | "write" } over the quorum (3 real nodes)', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeAll });

  async function mixed(instances: readonly Redlock[], readShare: number, rounds: number): Promise<Section[]> {
    const sections: Section[] = [];
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: instances.length * 3 }, async (_, worker) => {
        const redlock = instances[worker % instances.length];
        for (let round = 0; round < rounds; round++) {
          const mode = Math.random() < readShare ? 'read' : 'write';
          await redlock.using('rw:doc', { mode, wait: 10_000, fencing: true }, async (lock: Lock) => {
            const start = performance.now() - t0;
            await delay(1 + Math.random() * 10);
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
    return sections;
  }

  it('readers share, writers are alone: no writer overlaps anyone; writer tokens exceed every earlier token', async () => {
    const instances = await Promise.all([0, 1, 2].map(() => redlockOn(redisNodes)));
    const sections = await mixed(instances, 0.7, 6);
    expect(sections.length).toBe(54);
    expect(findExclusionViolations(sections)).toEqual([]);
    // Readers did share the resource (not vacuous), and both modes ran.
    const readers = sections.filter((s) => s.mode === 'read');
    expect(readers.some((a) => readers.some((b) => a !== b && a.start < b.end && b.start < a.end))).toBe(
      true,
    );
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

  /**
   * Readers streaming on one resource, four streams on four instances until `stop()`: each stream holds a read
   * lock for 30 ms and takes its next one before it lets the current go, so the readers set is never empty
   * while the streams run — unless the next read is refused (a writer holds the lock or waits for it), when
   * the stream lets go first and then waits for its next read.
   */
  async function readerStream(resource: string) {
    const instances = await Promise.all([0, 1, 2, 3].map(() => redlockOn(redisNodes)));
    let streaming = true;
    let done = 0;
    let refused = 0;
    const running = Promise.all(
      instances.map(async (redlock) => {
        let current = await redlock.acquire(resource, { mode: 'read', wait: 5_000 });
        while (streaming) {
          await delay(30);
          const next = await redlock.tryAcquire(resource, { mode: 'read' });
          if (!next) refused++;
          await current.release();
          current = next ?? (await redlock.acquire(resource, { mode: 'read', wait: 5_000 }));
          done++;
        }
        await current.release();
      }),
    );
    return {
      done: () => done,
      refused: () => refused,
      stop: async () => {
        streaming = false;
        await running;
      },
    };
  }

  it('writers are not starved: a waiting writer keeps new readers out and gets in while readers stream', async () => {
    const writerSide = await redlockOn(redisNodes);
    const stream = await readerStream('rw:stream');
    expect(await eventually(async () => stream.done() > 8)).toBe(true);
    const before = stream.done();
    // Within its wait, while the streams run (their wait time is measured in bench/).
    const writer = await writerSide.acquire('rw:stream', { wait: 3_000 });
    await writer.release();
    await delay(100);
    const after = stream.done();
    await stream.stop();
    expect(before).toBeGreaterThan(8); // the stream was flowing when the writer came
    expect(after).toBeGreaterThan(before); // and went on after it
    expect(stream.refused()).toBeGreaterThan(0); // the writer's intent kept new reads out
  });

  it('negative control: a writer whose intent lapses at once is starved by the same stream', async () => {
    const starved = new Redlock(
      redisNodes.urls,
      { logger: false, restartGuard: false },
      { unsafeNoWriterIntent: true },
    );
    try {
      const stream = await readerStream('rw:starve');
      await delay(200);
      const error = await starved.acquire('rw:starve', { wait: 1_500 }).catch((e: unknown) => e);
      if (error instanceof Lock) await error.release();
      const refused = stream.refused();
      await stream.stop();
      expect(refused).toBe(0); // no intent: no read was ever kept out
      expect(error).toBeInstanceOf(LockBusyError);
      expect((error as LockBusyError).votes.some((vote) => vote.readers)).toBe(true);
    } finally {
      await starved.quit();
    }
  });

  it('a reader is renewed in using(), expires on the servers when its holder crashes, and is released by owner', async () => {
    const redlock = await redlockOn(redisNodes, { ttl: 300 });
    await redlock.using('rw:renew', { mode: 'read' }, async (lock) => {
      await delay(700);
      expect(lock.signal.aborted).toBe(false);
    });
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
