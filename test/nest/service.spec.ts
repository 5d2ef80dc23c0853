import { Injectable } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import * as api from '../../lib';
import { LockBusyError, Locked, RedlockModule, RedlockService } from '../../lib';
import { useRedisNodes } from '../support';
import { TEST_OPTIONS, closeApps, createApp, gate, keyOf, valuesOnNodes } from './helpers';

@Injectable()
class LongJob {
  constructor(readonly redlock: RedlockService) {}

  @Locked('long:<0>', { ttl: 300 })
  async run(id: string, until: Promise<void>) {
    await until;
    const lock = this.redlock.current()!;
    return [lock.isExpired, lock.signal.aborted];
  }
}

describe('RedlockService (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeApps });
  let service: RedlockService;
  let job: LongJob;

  beforeAll(async () => {
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [LongJob],
    });
    service = app.get(RedlockService);
    job = app.get(LongJob);
  });

  it('acquire / tryAcquire / extend / release delegate to the core', async () => {
    const lock = await service.acquire(['s:a', 's:b'], { ttl: 1_000 });
    expect(lock.resources).toEqual(['s:a', 's:b']);
    expect(await service.tryAcquire('s:b')).toBeNull();
    await expect(service.acquire('s:a', { wait: 0 })).rejects.toBeInstanceOf(LockBusyError);

    await service.extend(lock, 5_000);
    expect(lock.remainingTime).toBeGreaterThan(1_000);

    const result = await service.release(lock);
    expect((await result.settled).releasedOn).toBe(3);
    expect(await valuesOnNodes(nodes, keyOf('s:a'))).toEqual([null, null, null]);
    const again = await service.tryAcquire('s:b');
    expect(again?.resources).toEqual(['s:b']);
    await service.release(again!);
  });

  it('using() runs the work under the lock and passes its result through', async () => {
    const seen = await service.using('s:using', { ttl: 2_000 }, async (lock) => [
      lock.ttl,
      service.current() === lock,
      await valuesOnNodes(nodes, keyOf('s:using')),
    ]);
    expect(seen.slice(0, 2)).toEqual([2_000, true]);
    expect((seen[2] as unknown[]).every((value) => typeof value === 'string')).toBe(true);
    expect(await valuesOnNodes(nodes, keyOf('s:using'))).toEqual([null, null, null]);
  });

  it('a @Locked method running longer than its ttl keeps its lock: the core renews it', async () => {
    const leave = gate();
    const began = performance.now();
    const running = job.run('1', leave.promise);
    // Waits for the renewals themselves, until one comes three ttls (900 ms) after the call.
    await new Promise<void>((resolve) => {
      const off = service.on('extended', ({ resources }) => {
        if (!resources.includes('long:1') || performance.now() - began < 900) return;
        off();
        resolve();
      });
    });
    expect(await service.tryAcquire('long:1')).toBeNull(); // an independent caller: still held
    expect((await valuesOnNodes(nodes, keyOf('long:1'))).every((value) => value !== null)).toBe(true);
    leave.open();
    expect(await running).toEqual([false, false]); // neither expired nor lost
  });
});

describe('the public API', () => {
  it('exports the curated runtime values and nothing else', () => {
    expect(Object.keys(api).sort()).toEqual([
      'AcquireAbortedError',
      'DEFAULT_MODULE_OPTIONS',
      'DEFAULT_OPTIONS',
      'ForeignDataError',
      'InvalidArgumentError',
      'InvalidLockKeyError',
      'Lock',
      'LockBusyError',
      'LockBusyFilter',
      'LockLostError',
      'LockQueueFullError',
      'LockRevokedError',
      'Locked',
      'MemoryNode',
      'PermitCountMismatchError',
      'QuorumUnavailableError',
      'Redlock',
      'RedlockClosedError',
      'RedlockError',
      'RedlockHealthIndicator',
      'RedlockModule',
      'RedlockService',
      'ShutdownError',
      'UnknownOptionError',
      'instrumentRedlock',
      'memoryNodes',
    ]);
  });

  it('every error is a RedlockError', () => {
    for (const ErrorClass of [
      api.InvalidArgumentError,
      api.InvalidLockKeyError,
      api.UnknownOptionError,
      api.LockBusyError,
      api.QuorumUnavailableError,
      api.LockLostError,
      api.AcquireAbortedError,
    ]) {
      expect(ErrorClass.prototype).toBeInstanceOf(api.RedlockError);
    }
  });
});
