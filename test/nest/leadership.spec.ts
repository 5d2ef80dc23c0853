import { Injectable } from '@nestjs/common';
import { Lock, RedlockModule, RedlockService, ShutdownError } from '../../lib';
import { useRedisNodes } from '../support';
import {
  TEST_OPTIONS,
  closeApp,
  closeApps,
  createApp,
  delay,
  eventually,
  keyOf,
  valuesOnNodes,
} from './helpers';

/** A provider whose method runs only while this instance leads (what a singleton job runner does). */
@Injectable()
class Coordinator {
  readonly terms: Lock[] = [];
  endedBy: unknown;

  constructor(readonly redlock: RedlockService) {}

  run(): Promise<string> {
    return this.redlock.lead('nest:coordinator', async (lease) => {
      this.terms.push(lease);
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
    await eventually(async () => a.terms.length === 1);
    const leadingB = b.run();
    await delay(1_500); // longer than the lease's ttl: renewed, so B keeps waiting
    expect(b.terms).toHaveLength(0);

    await closeApp(first);
    expect(await leadingA).toBe('stepped down');
    expect(a.endedBy).toBeInstanceOf(ShutdownError);
    expect(await eventually(async () => b.terms.length === 1)).toBe(true);
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
    await eventually(async () => a.terms.length === 1);
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
