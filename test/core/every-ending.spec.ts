import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  AcquireAbortedError,
  Lock,
  LockBusyError,
  LockLostError,
  LockRevokedError,
  Locked,
  Redlock,
  RedlockClosedError,
  RedlockModule,
  RedlockService,
  ShutdownError,
} from '../../lib';
import { useRedisNodes } from '../support';
import type { RedisNodes } from '../support';
import { activeHandles, closeAdmin, handlesLeft, leftBy } from './leftovers';

const OPTIONS = { logger: false as const, restartGuard: false as const, nodeTimeout: 300 };

/** Resolves once `signal` aborts. */
const abortOf = (signal: AbortSignal) =>
  new Promise<void>((resolve) =>
    signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }),
  );

/** The error's name a call rejected with, or 'resolved'. */
const ending = (call: Promise<unknown>) =>
  call.then(
    () => 'resolved',
    (error: Error) => error.name,
  );

/** Deletes `resource`'s lock key on every node, under its holder (a lock lost by expiry or a node's data loss). */
async function deleteUnder(nodes: RedisNodes, resource: string): Promise<void> {
  await Promise.all(
    nodes.nodes.map(async (node) => {
      const admin = node.redis();
      await admin.del(`redlock:{${resource}}`);
      await closeAdmin(admin);
    }),
  );
}

@Injectable()
class Orders {
  /** A `@Locked` method that runs `work` with its lock; busy at once (wait 0). */
  @Locked('order:<0>', { wait: 0 })
  async pay(id: string, work: (lock: Lock) => Promise<void>): Promise<void> {
    await work(this.redlock.current()!);
  }
  constructor(private readonly redlock: RedlockService) {}
}

/**
 * Issue "nothing left behind", done-when: one spec drives every public entry point — core and Nest — through
 * its endings (success, busy, timeout, abort, lost, revoked, node down), and checks after each call that none of
 * the caller's keys (lock, intent, permit, reader entry) is left on a reachable node, and once `quit()` /
 * `app.close()` resolved that no handle (socket, timer, subscriber) is active. No wall-clock waits: a call that
 * ends without the lock has cleaned up when it returns; a release is waited for through its `settled`.
 */
describe('every entry point, every ending: nothing left on the nodes, no handle after close (3 real nodes)', () => {
  const opened: Redlock[] = [];
  const nodes = useRedisNodes(3, {
    afterEach: async () => void (await Promise.all(opened.splice(0).map((r) => r.quit()))),
  });
  const open = (options: object) => {
    const instance = new Redlock(nodes.urls, { ...OPTIONS, ...options });
    opened.push(instance);
    return instance;
  };
  const mineLeft = (label: string) => leftBy(nodes, label);

  it('core: acquire, tryAcquire, using, extend, release, read, write, permits, lead, inspect, holders, revoke, quit', async () => {
    const before = activeHandles();
    const holder = open({ owner: 'holder' });
    const subject = open({ owner: 'subject', ttl: 30_000 });
    const operator = open({ owner: 'operator' });
    await Promise.all([holder, subject, operator].map((instance) => instance.connect(2_000)));
    const endings: Record<string, string> = {};
    const settle = async (lock: Lock) => (await subject.release(lock)).settled;

    // Success.
    await settle(await subject.acquire('e:w'));
    await settle((await subject.tryAcquire('e:t'))!);
    await settle(await subject.acquire('e:r', { mode: 'read' }));
    await settle(await subject.acquire('e:wr', { mode: 'write' }));
    await settle(await subject.acquire('e:p', { permits: 2 }));
    await settle(await subject.extend(await subject.acquire('e:x'), 20_000));
    endings.using = await ending(subject.using('e:u', async () => undefined));
    endings.lead = await ending(subject.lead('e:lead', async () => undefined));
    await subject.inspect('e:w');
    await subject.holders({ prefix: 'e:' });
    endings.revokeFree = await ending(operator.revoke('e:free', { reason: 'nothing held' }));
    // using() and lead() resolve once their release did at quorum; the third node's answer may be in flight.
    // quit() waits for such releases: checked below, after it.

    // Busy, timeout and abort, against locks the holder keeps: each call has cleaned up when it ends.
    const held = [
      await holder.acquire('e:busy'),
      await holder.acquire('e:pool', { permits: 1 }),
      await holder.acquire('e:read', { mode: 'read' }),
      await holder.acquire('e:leader'),
    ];
    expect(await subject.tryAcquire('e:busy')).toBeNull();
    expect(await subject.tryAcquire('e:busy', { mode: 'read' })).toBeNull();
    expect(await subject.tryAcquire('e:pool', { permits: 1 })).toBeNull();
    expect(await mineLeft('subject')).toEqual([]);
    endings.busy = await ending(subject.acquire('e:busy', { wait: 0 }));
    endings.usingBusy = await ending(subject.using('e:busy', { wait: 0 }, async () => undefined));
    endings.timeout = await ending(subject.acquire('e:busy', { wait: 300 }));
    endings.writerTimeout = await ending(subject.acquire('e:read', { mode: 'write', wait: 300 }));
    endings.permitTimeout = await ending(subject.acquire('e:pool', { permits: 1, wait: 300 }));
    expect(await mineLeft('subject')).toEqual([]); // the waiting writer's intent included
    const controller = new AbortController();
    const aborted = ending(subject.acquire('e:read', { wait: 10_000, signal: controller.signal }));
    const leading = new AbortController();
    const campaign = ending(subject.lead('e:leader', async () => undefined, { signal: leading.signal }));
    // Aborted once the holder's release announcements were subscribed to (the waiters are asleep by then).
    await subject.inspect('e:read');
    controller.abort();
    leading.abort();
    endings.abort = await aborted;
    endings.leadAborted = await campaign;
    expect(await mineLeft('subject')).toEqual([]);

    // Lost and revoked under running work.
    endings.lost = await ending(
      subject.using('e:lost', { ttl: 900 }, async (lock) => {
        await deleteUnder(nodes, 'e:lost');
        await abortOf(lock.signal);
      }),
    );
    const lostLock = await subject.acquire('e:lost2', { ttl: 30_000 });
    await deleteUnder(nodes, 'e:lost2');
    endings.extendLost = await ending(subject.extend(lostLock, 30_000));
    endings.releaseLost = String((await subject.release(lostLock)).releasedOn);
    endings.revoked = await ending(
      subject.using('e:revoked', async (lock) => {
        await operator.revoke('e:revoked', { reason: 'test' });
        await abortOf(lock.signal);
      }),
    );
    expect(await mineLeft('subject')).toEqual([]);

    // A waiter ended by quit().
    const waiting = ending(subject.acquire('e:busy', { wait: 10_000 }));
    await subject.inspect('e:busy');
    await subject.quit();
    endings.quit = await waiting;
    await Promise.all(held.map(async (lock) => (await holder.release(lock)).settled));
    await Promise.all([holder.quit(), operator.quit()]);

    expect(endings).toEqual({
      using: 'resolved',
      lead: 'resolved',
      revokeFree: 'resolved',
      busy: LockBusyError.name,
      usingBusy: LockBusyError.name,
      timeout: LockBusyError.name,
      writerTimeout: LockBusyError.name,
      permitTimeout: LockBusyError.name,
      abort: AcquireAbortedError.name,
      leadAborted: AcquireAbortedError.name,
      lost: LockLostError.name,
      extendLost: expect.stringMatching(/Error$/),
      releaseLost: '0',
      revoked: LockRevokedError.name,
      quit: RedlockClosedError.name,
    });
    expect(await handlesLeft(before)).toEqual([]);
    for (const label of ['subject', 'holder', 'operator'])
      expect([label, await mineLeft(label)]).toEqual([label, []]);
  });
  it('node down: a node paused through the calls keeps only keys that expire within one ttl of its return', async () => {
    const before = activeHandles();
    const subject = open({ owner: 'subject', ttl: 5_000 });
    const holder = open({ owner: 'holder' });
    await Promise.all([subject.connect(2_000), holder.connect(2_000)]);
    const down = nodes.nodes[2];
    await down.pause();
    try {
      await (
        await subject.release(await subject.acquire('d:w'))
      ).settled;
      await subject.using('d:u', { mode: 'read' }, async () => undefined);
      await subject.lead('d:lead', async () => undefined);
      const held = await holder.acquire('d:busy');
      const busy = await ending(subject.acquire('d:busy', { wait: 300 }));
      expect(busy).toBe(LockBusyError.name);
      await (
        await holder.release(held)
      ).settled;
      // The reachable nodes: nothing of the subject's, while the paused one still answers nothing.
      expect(await mineLeft('subject')).toEqual([]);
      await subject.quit();
      await holder.quit();
      expect(await handlesLeft(before)).toEqual([]);
    } finally {
      await down.resume();
    }
    // Back: whatever of the subject's it kept (the commands queued while it was paused may still run) expires
    // within one ttl: every such key has an expiry, none longer than the ttl.
    const admin = down.redis();
    try {
      for (const key of await admin.keys('*')) {
        const ttl = await admin.pttl(key);
        const value = (await admin.type(key)) === 'string' ? await admin.get(key) : '';
        if (value?.endsWith(':subject')) expect([key, ttl > 0 && ttl <= 5_000]).toEqual([key, true]);
      }
    } finally {
      await closeAdmin(admin);
    }
  });

  it('Nest: RedlockService calls, @Locked methods and lead() through their endings, then app.close()', async () => {
    const before = activeHandles();
    const holder = open({ owner: 'holder' });
    const operator = open({ owner: 'operator' });
    await Promise.all([holder.connect(2_000), operator.connect(2_000)]);
    const moduleRef = await Test.createTestingModule({
      imports: [RedlockModule.forRoot(nodes.urls, { ...OPTIONS, owner: 'nest', connectTimeout: 2_000 })],
      providers: [Orders],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const service = app.get(RedlockService);
    const orders = app.get(Orders);
    const endings: Record<string, string> = {};

    await (
      await service.release(await service.acquire('n:w'))
    ).settled;
    await (
      await service.release((await service.tryAcquire('n:t', { mode: 'read' }))!)
    ).settled;
    endings.using = await ending(service.using('n:u', { permits: 2 }, async () => undefined));
    endings.locked = await ending(orders.pay('1', async () => undefined));
    const held = await holder.acquire('order:2');
    endings.lockedBusy = await ending(orders.pay('2', async () => undefined));
    endings.serviceBusy = await ending(service.acquire('order:2', { wait: 300 }));
    expect(await service.tryAcquire('order:2')).toBeNull();
    endings.lockedLost = await ending(
      orders.pay('3', async (lock) => {
        await deleteUnder(nodes, 'order:3');
        await abortOf(lock.signal);
      }),
    );
    endings.lockedRevoked = await ending(
      orders.pay('4', async (lock) => {
        await operator.revoke('order:4', { reason: 'test' });
        await abortOf(lock.signal);
      }),
    );
    expect(await mineLeft('nest')).toEqual([]);
    // Still campaigning (the holder leads) and still waiting when the application closes.
    const leader = await holder.acquire('n:leader');
    const campaign = ending(service.lead('n:leader', async () => undefined));
    const waiting = ending(service.acquire('order:2', { wait: 10_000 }));
    await service.inspect('n:leader');
    await app.close();
    endings.leadAtClose = await campaign;
    endings.waitingAtClose = await waiting;
    await Promise.all([leader, held].map(async (lock) => (await holder.release(lock)).settled));
    await Promise.all(opened.splice(0).map((instance) => instance.quit()));

    expect(endings).toEqual({
      using: 'resolved',
      locked: 'resolved',
      lockedBusy: LockBusyError.name,
      serviceBusy: LockBusyError.name,
      lockedLost: LockLostError.name,
      lockedRevoked: LockRevokedError.name,
      leadAtClose: ShutdownError.name,
      waitingAtClose: expect.stringMatching(/^(ShutdownError|RedlockClosedError)$/),
    });
    expect(await handlesLeft(before)).toEqual([]);
    for (const label of ['nest', 'holder', 'operator'])
      expect([label, await mineLeft(label)]).toEqual([label, []]);
  });

  it('negative controls: a key left behind and an instance never closed are found', async () => {
    const before = activeHandles();
    const subject = open({ owner: 'planted' });
    await subject.connect(2_000);
    const lock = await subject.acquire('planted', { ttl: 30_000 });
    expect(await mineLeft('planted')).toEqual([
      '0 redlock:{planted}',
      '1 redlock:{planted}',
      '2 redlock:{planted}',
    ]);
    // Not quit yet: its sockets are found.
    expect(await handlesLeft(before)).toContainEqual(expect.stringMatching(/^\d+ × TCPSocketWrap$/));
    await (
      await subject.release(lock)
    ).settled;
    expect(await mineLeft('planted')).toEqual([]);
    await subject.quit();
    expect(await handlesLeft(before)).toEqual([]);
  });
});
