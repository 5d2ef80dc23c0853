import { AcquireReply, LockNode, Redlock, RedlockError } from '../../lib';
import { useRedisNodes } from '../support';
import { valuesOnNodes } from './helpers';

/** A custom node whose methods misbehave as told; the others answer like an honest free node. */
function hostileNode(misbehave: Partial<Record<'acquire' | 'release' | 'fence', () => unknown>>): LockNode {
  return {
    name: 'hostile:1',
    acquire: (misbehave.acquire ??
      (async (): Promise<AcquireReply> => ({ outcome: 'acquired', token: 1 }))) as never,
    fence: (misbehave.fence ?? (async () => true)) as never,
    extend: async () => true,
    release: (misbehave.release ?? (async () => 0)) as never,
  };
}

const VARIANTS: [string, Parameters<typeof hostileNode>[0]][] = [
  ['acquire returns a plain object, not a Promise', { acquire: () => ({ outcome: 'acquired', token: 1 }) }],
  [
    'acquire throws synchronously',
    {
      acquire: () => {
        throw new Error('sync boom');
      },
    },
  ],
  ['acquire resolves null', { acquire: async () => null }],
  ['acquire resolves an unknown outcome', { acquire: async () => ({ outcome: 'yes' }) }],
  ['acquire resolves a NaN token', { acquire: async () => ({ outcome: 'acquired', token: NaN }) }],
  ['acquire resolves a token of 1e300', { acquire: async () => ({ outcome: 'acquired', token: 1e300 }) }],
  ['acquire resolves a busy ttl "x"', { acquire: async () => ({ outcome: 'busy', holderTtl: 'x' }) }],
  [
    'fence returns undefined, release throws',
    {
      fence: () => undefined,
      release: () => {
        throw new Error('sync release boom');
      },
    },
  ],
];

describe('a custom LockNode that breaks its contract, next to 2 real nodes', () => {
  const nodes = useRedisNodes(2);

  async function withRedlock(
    misbehave: Parameters<typeof hostileNode>[0],
    test: (redlock: Redlock, errors: Error[]) => Promise<void>,
  ): Promise<void> {
    const redlock = new Redlock([hostileNode(misbehave), ...nodes.urls], {
      logger: false,
      restartGuard: false,
      fencing: true,
    });
    const errors: Error[] = [];
    redlock.on('node-error', (event) => {
      if (event.node === 'hostile:1') errors.push(event.error);
    });
    try {
      await redlock.connect(2_000);
      await test(redlock, errors);
    } finally {
      await redlock.quit();
    }
  }

  it.each(VARIANTS)(
    '%s: its error vote; the lock and token come from the honest nodes',
    async (_, misbehave) => {
      await withRedlock(misbehave, async (redlock, errors) => {
        const lock = await redlock.acquire('contract', { wait: 0 });
        expect(Number.isSafeInteger(lock.fencingToken)).toBe(true);
        expect(lock.fencingToken).toBeGreaterThan(1e15); // an honest token: server time in µs
        await lock.release();
        expect(await valuesOnNodes(nodes, 'redlock:{contract}')).toEqual([null, null]);
        expect(errors.length).toBeGreaterThanOrEqual(1);
        for (const error of errors) expect(error.message).toMatch(/^(hostile:1: LockNode\.\w+\(\) |sync )/);
      });
    },
  );

  it.each(VARIANTS)('%s: a failed acquisition still cleans up the honest nodes', async (_, misbehave) => {
    const admin = nodes.nodes[1].redis();
    await admin.set('redlock:{contract}', 'another-owner', 'PX', 10_000);
    admin.disconnect();
    await withRedlock(misbehave, async (redlock) => {
      const error = await redlock.acquire('contract', { wait: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedlockError);
      // Node 0 said yes before the attempt failed: its key is gone, node 1 keeps the other owner's.
      expect(await valuesOnNodes(nodes, 'redlock:{contract}')).toEqual([null, 'another-owner']);
    });
  });
});
