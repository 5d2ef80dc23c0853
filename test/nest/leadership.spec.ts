import { Injectable } from '@nestjs/common';
import { Lock, RedlockModule, RedlockService, ShutdownError } from '../../lib';
import { useRedisNodes } from '../support';
import { TEST_OPTIONS, closeApp, closeApps, createApp, gate, keyOf, valuesOnNodes } from './helpers';

/** A provider whose method runs only while this instance leads (what a singleton job runner does). */
@Injectable()
class Coordinator {
  readonly terms: Lock[] = [];
  /** Opens when this instance's first term begins. */
  readonly firstTerm = gate();
  endedBy: unknown;

  constructor(readonly redlock: RedlockService) {}

  run(): Promise<string> {
    return this.redlock.lead('nest:coordinator', async (lease) => {
      this.terms.push(lease);
      this.firstTerm.open();
      await new Promise<void>((resolve) => lease.signal.addEventListener('abort', () => resolve()));
      this.endedBy = lease.signal.reason;
      return 'stepped down';
    });
  }
}

describe('RedlockService.lead() in a Nest application (3 real nodes)', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeApps });

  const app = () =>
    createApp({
      imports: [RedlockModule.forRoot(redisNodes.urls, { ...TEST_OPTIONS, ttl: 1_000 })],
      providers: [Coordinator],
    });

  it('one instance leads; app.close() ends its term (lease.signal aborts), releases, and the other takes over', async () => {
    const [first, second] = await Promise.all([app(), app()]);
    const a = first.get(Coordinator);
    const b = second.get(Coordinator);
    const leadingA = a.run();
    await a.firstTerm.promise;
    expect(a.terms).toHaveLength(1);
    const lease = a.terms[0];
    const lapsedAt = lease.validUntil; // without renewals, A's term would end here
    const leadingB = b.run();
    // A's renewals, until one comes after the deadline the lease had when B began campaigning: renewed past
    // its ttl, so B keeps waiting.
    // (A lost lease ends the wait too, and fails the next line.)
    await new Promise<void>((resolve) => {
      lease.signal.addEventListener('abort', () => resolve(), { once: true });
      const off = first.get(RedlockService).on('extended', () => {
        if (performance.now() <= lapsedAt) return;
        off();
        resolve();
      });
    });
    expect(lease.signal.aborted).toBe(false);
    expect(second.get(RedlockService).stats.waiting).toBe(1); // B is campaigning
    expect(b.terms).toHaveLength(0);

    await closeApp(first);
    expect(await leadingA).toBe('stepped down');
    expect(a.endedBy).toBeInstanceOf(ShutdownError);
    await b.firstTerm.promise;
    expect(b.terms).toHaveLength(1);
    expect(b.terms[0].fencingToken!).toBeGreaterThan(a.terms[0].fencingToken!);
    expect(
      (await valuesOnNodes(redisNodes, keyOf('nest:coordinator'))).filter((v) => v === b.terms[0].value),
    ).toHaveLength(3);

    await closeApp(second);
    expect(await leadingB).toBe('stepped down');
    expect(await valuesOnNodes(redisNodes, keyOf('nest:coordinator'))).toEqual([null, null, null]);
  });

  it('an instance still campaigning when its app closes: lead() rejects with ShutdownError, not RedlockClosedError', async () => {
    const [leader, waiting] = await Promise.all([app(), app()]);
    const a = leader.get(Coordinator);
    const leadingA = a.run();
    await a.firstTerm.promise;
    const campaign = waiting.get(Coordinator).run();
    campaign.catch(() => undefined); // settled below, after the close
    await closeApp(waiting);
    const outcome = await campaign.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    expect(outcome).toBeInstanceOf(ShutdownError);
    expect((outcome as Error).message).toMatch(/shutting down/);
    expect(waiting.get(Coordinator).terms).toHaveLength(0);
    await closeApp(leader);
    expect(await leadingA).toBe('stepped down');
  });
});
