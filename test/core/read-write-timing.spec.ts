import { Lock, LockBusyError } from '../../lib';
import type { RedlockCore } from '../../lib/core';
import { Interval, findExclusionViolations, findStaleTokens } from '../safety/checkers/intervals';
import { VirtualClock } from './virtual-clock';
import { modelCluster } from './model-nodes';

type Section = Interval & { readonly mode: 'read' | 'write' };

/** Work that takes `ms` of virtual time. */
const working = (clock: VirtualClock, ms: number) =>
  new Promise<void>((resolve) => clock.setTimeout(resolve, ms));

/**
 * The timing of read-write locks on a virtual clock over in-memory nodes that run the model of the scripts
 * (moved from read-write.spec.ts, where it slept on the real clock over real nodes): readers sharing and
 * writers alone under a mixed load, a waiting writer's intent keeping a stream of readers out (and its
 * negative control), a reader renewed past its ttl.
 */
describe('read-write lock timing (virtual clock, in-memory model nodes)', () => {
  it('readers share, writers are alone: no writer overlaps anyone; writer tokens exceed every earlier token', async () => {
    const { clock, rng, instance } = modelCluster(11);
    const instances = [0, 1, 2].map(() => instance());
    const sections: Section[] = [];
    const all = Promise.all(
      Array.from({ length: instances.length * 3 }, async (_, worker) => {
        const redlock = instances[worker % instances.length];
        for (let round = 0; round < 6; round++) {
          const mode = rng.next() < 0.7 ? 'read' : 'write';
          await redlock.using('rw:doc', { mode, wait: 10_000, fencing: true }, async (lock: Lock) => {
            const start = clock.now();
            await working(clock, 1 + rng.next() * 10);
            sections.push({
              resource: 'rw:doc',
              holder: `w${worker}`,
              start,
              end: clock.now(),
              token: lock.fencingToken,
              mode,
            });
          });
        }
      }),
    );
    await clock.advance(120_000);
    await all;
    expect(sections.length).toBe(54);
    expect(findExclusionViolations(sections)).toEqual([]);
    // Readers did share the resource (not vacuous), and both modes ran.
    const readers = sections.filter((s) => s.mode === 'read');
    expect(readers.some((a) => readers.some((b) => a !== b && a.start < b.end && b.start < a.end))).toBe(
      true,
    );
    expect(sections.some((s) => s.mode === 'write')).toBe(true);
    expect(findStaleTokens(sections)).toEqual([]);
  });

  /**
   * Readers streaming on one resource, four streams on four instances until `stop()`: each stream holds a read
   * lock for 30 ms and takes its next one before it lets the current go, so the readers set is never empty
   * while the streams run — unless the next read is refused (a writer holds the lock or waits for it), when
   * the stream lets go first and then waits for its next read.
   */
  function readerStream(clock: VirtualClock, instances: RedlockCore[], resource: string) {
    let streaming = true;
    let done = 0;
    let refused = 0;
    const running = Promise.all(
      instances.map(async (redlock) => {
        let current = await redlock.acquire(resource, { mode: 'read', wait: 5_000 });
        while (streaming) {
          await working(clock, 30);
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
        await clock.advance(5_100);
        await running;
      },
    };
  }

  it('writers are not starved: a waiting writer keeps new readers out and gets in while readers stream', async () => {
    const { clock, instance } = modelCluster(3);
    const writerSide = instance();
    const stream = readerStream(
      clock,
      [0, 1, 2, 3].map(() => instance()),
      'rw:stream',
    );
    await clock.advance(300);
    const before = stream.done();
    const came = clock.now();
    let grantedAfter: number | undefined;
    let doneAtRelease = 0;
    const writing = writerSide.acquire('rw:stream', { wait: 3_000 }).then(async (writer) => {
      grantedAfter = clock.now() - came;
      await writer.release();
      doneAtRelease = stream.done();
    });
    await clock.advance(3_000);
    await writing; // within its wait, while the streams run
    expect(grantedAfter).toBeLessThanOrEqual(3_000);
    await clock.advance(100);
    const after = stream.done();
    await stream.stop();
    expect(before).toBeGreaterThan(8); // the stream was flowing when the writer came
    expect(after).toBeGreaterThan(before); // and went on after it
    expect(after).toBeGreaterThan(doneAtRelease);
    expect(stream.refused()).toBeGreaterThan(0); // the writer's intent kept new reads out
  });

  it('negative control: a writer whose intent lapses at once is starved by the same stream', async () => {
    const { clock, instance } = modelCluster(3);
    const starved = instance({}, { unsafeNoWriterIntent: true });
    const stream = readerStream(
      clock,
      [0, 1, 2, 3].map(() => instance()),
      'rw:starve',
    );
    await clock.advance(200);
    const attempt = starved.acquire('rw:starve', { wait: 1_500 }).catch((e: unknown) => e);
    await clock.advance(1_600);
    const error = await attempt;
    if (error instanceof Lock) await error.release();
    const refused = stream.refused();
    await stream.stop();
    expect(stream.done()).toBeGreaterThan(8); // the stream flowed meanwhile
    expect(refused).toBe(0); // no intent: no read was ever kept out
    expect(error).toBeInstanceOf(LockBusyError);
    expect((error as LockBusyError).votes.some((vote) => vote.readers)).toBe(true);
  });

  it('a reader is renewed in using() past its ttl: not aborted, still keeping writers out', async () => {
    const { clock, instance } = modelCluster();
    const [redlock, writer] = [instance({ ttl: 300 }), instance()];
    let checked = false;
    const reading = redlock.using('rw:renew', { mode: 'read' }, async (lock) => {
      await working(clock, 700);
      expect(lock.signal.aborted).toBe(false);
      const intruder = await writer.tryAcquire('rw:renew');
      expect(intruder?.value ?? null).toBeNull();
      checked = true;
    });
    await clock.advance(800);
    await reading;
    expect(checked).toBe(true);
  });
});
