import { Test } from '@nestjs/testing';
import type { LockNode } from '../../lib';
import { LockLostError, Redlock, RedlockClosedError, RedlockModule } from '../../lib';
import { NO_REPLY, startFakeRespNode, useRedisNodes } from '../support';
import type { FakeRespNode } from '../support';
import { activeHandles, handlesLeft as leftBehind } from './leftovers';

const OPTIONS = { logger: false as const, restartGuard: false as const, nodeTimeout: 300 };

/**
 * Issue "nothing left behind": once `quit()` or `app.close()` has resolved, the instance holds no socket, timer
 * or subscriber — whatever its nodes do (down, never confirming a subscription). Checked by the handles Node
 * reports, not by waiting.
 */
describe('no handle outlives quit() or app.close() (real nodes, one of them down)', () => {
  const redisNodes = useRedisNodes(3);
  let silent: FakeRespNode;

  beforeAll(async () => {
    // Answers like Redis but never confirms a SUBSCRIBE: the revocation subscription stays pending there.
    silent = await startFakeRespNode((command) => (command === 'subscribe' ? NO_REPLY : undefined));
  });
  afterAll(() => silent.close());

  /** Runs `check` with node 2 down, and starts it again afterwards (the harness flushes the nodes later). */
  async function withNodeDown(check: () => Promise<void>): Promise<void> {
    await redisNodes.nodes[2].kill();
    try {
      await check();
    } finally {
      await redisNodes.nodes[2].start();
    }
  }

  it('quit() with a node down, after locks, a waiter it ended, and start-up bounded by connect()', () =>
    withNodeDown(async () => {
      const before = activeHandles();
      const redlock = new Redlock(redisNodes.urls, OPTIONS);
      const other = new Redlock(redisNodes.urls, OPTIONS);
      await Promise.all([redlock.connect(300), other.connect(300)]);
      const held = await redlock.acquire('lb:a', { ttl: 10_000 });
      await redlock.using('lb:b', { mode: 'read' }, async () => undefined);
      const waiting = other.acquire('lb:a', { wait: 5_000 }).catch((error: Error) => error.name);
      await other.quit();
      expect(await waiting).toBe('RedlockClosedError');
      await held.release();
      await redlock.quit();
      expect(await leftBehind(before)).toEqual([]);
    }));

  it("quit() while locks are kept alive: no renewal after it, and only an unref'd deadline watch", async () => {
    const before = activeHandles();
    const redlock = new Redlock(redisNodes.urls, OPTIONS);
    await redlock.connect(300);
    const kept = await redlock.acquire('lb:kept', { ttl: 600 });
    redlock.keepAlive(kept);
    let leave!: () => void;
    const left = new Promise<void>((resolve) => (leave = resolve));
    let entered!: () => void;
    const working = new Promise<void>((resolve) => (entered = resolve));
    const using = redlock.using('lb:work', { ttl: 10_000 }, async (lock) => {
      entered();
      await left;
      return lock.signal.aborted;
    });
    await working;
    const extensionsSent = kept.extensionsSent;
    await redlock.quit();
    expect(await leftBehind(before)).toEqual([]);
    // Still valid until its deadline, and its holder is told then, as before quit(); never extended again.
    const lost = await new Promise((resolve) =>
      kept.signal.addEventListener('abort', () => resolve(kept.signal.reason)),
    );
    expect(lost).toBeInstanceOf(LockLostError);
    expect(kept.extensionsSent).toBe(extensionsSent);
    expect(() => redlock.keepAlive(kept)).toThrow(RedlockClosedError);
    // Work that ends within its lock's validity was protected throughout.
    leave();
    expect(await using).toBe(false);
  });

  it('quit() while the revocation subscription waits for a node that never confirms it', async () => {
    const before = activeHandles();
    const redlock = new Redlock([redisNodes.urls[0], redisNodes.urls[1], silent.url], OPTIONS);
    await redlock.connect(300);
    const lock = await redlock.acquire('lb:c');
    await lock.release();
    expect(silent.commands.some(([name]) => name.toLowerCase() === 'subscribe')).toBe(true);
    await redlock.quit();
    // The fake node runs in this process: its side of each connection is a handle until it sees the close.
    await silent.idle();
    expect(await leftBehind(before)).toEqual([]);
  });

  it('app.close() of a Nest app whose module has a node down', () =>
    withNodeDown(async () => {
      const before = activeHandles();
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot(redisNodes.urls, { ...OPTIONS, connectTimeout: 300 })],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      await app.close();
      expect(await leftBehind(before)).toEqual([]);
    }));

  it('negative control: a timer planted between the two readings is reported, with where it was made', async () => {
    const before = activeHandles();
    const plant = () => setTimeout(() => undefined, 60_000);
    const planted = plant();
    // Neither of these keeps the process alive: not reported.
    clearTimeout(plant());
    const unref = plant().unref();
    try {
      expect(await leftBehind(before)).toEqual([
        expect.stringMatching(/^1 × Timeout \(created at [^;]*left-behind\.spec\.ts:\d+[^;]*\)$/),
      ]);
    } finally {
      clearTimeout(planted);
      clearTimeout(unref);
    }
  });
});

describe('connect() waits for the revocation subscription within its own timeout', () => {
  it('resolves although no node ever confirms the subscription', async () => {
    const node: LockNode = {
      name: 'never-subscribed',
      connect: () => Promise.resolve(),
      acquire: () => Promise.reject(new Error('unused')),
      fence: () => Promise.resolve(false),
      extend: () => Promise.resolve(false),
      release: () => Promise.resolve(0),
      subscribeToChannel: () => new Promise(() => undefined),
    };
    const redlock = new Redlock([node], { logger: false });
    // Before the fix, connect() awaited the subscription itself: this call never resolved.
    const states = await redlock.connect(50);
    expect(states).toEqual([{ node: 'never-subscribed', ready: true, guardMode: undefined }]);
    await redlock.quit();
  });
});
