import { Injectable } from '@nestjs/common';
import { InvalidArgumentError, Locked, RedlockModule, RedlockService } from '../../lib';
import { keyWrittenOnQuorum } from '../core/keyspace';
import { useRedisNodes } from '../support';
import { TEST_OPTIONS, closeApps, createApp, gate, keyOf } from './helpers';

/** Reports are read under a read lock while an update holds the write lock. */
@Injectable()
class Reports {
  reading = 0;
  maxReading = 0;
  writing = 0;
  overlaps = 0;
  /** Called as each read begins (under its lock). */
  onRead?: () => void;

  constructor(readonly redlock: RedlockService) {}

  @Locked('report:<0>', { mode: 'read', wait: 5_000 })
  async read(id: string, until: Promise<void>): Promise<string> {
    if (this.writing > 0) this.overlaps++;
    this.reading++;
    this.maxReading = Math.max(this.maxReading, this.reading);
    this.onRead?.();
    await until;
    this.reading--;
    return `${id}:${this.redlock.current()!.mode}`;
  }

  @Locked('report:<0>', { wait: 5_000 })
  async update(id: string, readInside = false): Promise<string> {
    if (this.reading > 0 || this.writing > 0) this.overlaps++;
    this.writing++;
    // A read of the same resource inside the write passes (the write lock covers it).
    const inner = readInside ? await this.read(id, Promise.resolve()) : '';
    this.writing--;
    return inner;
  }

  @Locked('report:<0>', { mode: 'read' })
  async readThenWrite(id: string): Promise<string> {
    return this.update(id);
  }
}

describe('@Locked(key, { mode }) in a Nest application (3 real nodes)', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeApps });

  const app = () =>
    createApp({ imports: [RedlockModule.forRoot(redisNodes.urls, TEST_OPTIONS)], providers: [Reports] });

  it('reads share, an update waits for them and runs alone, across two instances', async () => {
    const [first, second] = await Promise.all([app(), app()]);
    const a = first.get(Reports);
    const b = second.get(Reports);
    const hold = gate();
    const allReading = gate();
    let began = 0;
    a.onRead = b.onRead = () => ++began === 3 && allReading.open();
    const reads = [a.read('r1', hold.promise), b.read('r1', hold.promise), a.read('r1', hold.promise)];
    // All three hold the read lock at once.
    await allReading.promise;
    expect(a.reading + b.reading).toBe(3);
    // The writer's refusals are seen on the nodes: a writer kept out by readers writes its intent there.
    const refused = await keyWrittenOnQuorum(redisNodes, `${keyOf('report:r1')}:intent`);
    let updated = false;
    const update = b.update('r1').then(() => (updated = true));
    try {
      await Promise.race([refused.written, update]); // (a writer let in ends the wait, and fails the next line)
    } finally {
      await refused.stop();
    }
    expect(updated).toBe(false); // the writer waits for the readers
    hold.open();
    expect(await Promise.all(reads)).toEqual(['r1:read', 'r1:read', 'r1:read']);
    await update;
    expect(a.overlaps + b.overlaps).toBe(0);
  });

  it('a read inside a write of the same resource passes; a write inside a read is refused at once', async () => {
    const reports = (await app()).get(Reports);
    expect(await reports.update('r2', true)).toBe('r2:write');
    const error = await reports.readThenWrite('r2').catch((e: unknown) => e);
    // Refused, not a wait for itself (that would end in LockBusyError after its 5 s wait).
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(
      /Reports\.update asks to write "report:r2", which this call chain holds for reading/,
    );
  });
});
