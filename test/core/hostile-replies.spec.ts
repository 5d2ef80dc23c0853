import { Redlock } from '../../lib';
import { ACQUIRE_SCRIPT } from '../../lib/redis';
import { READ_PERMITS_SCRIPT } from '../../lib/redis/scripts';
import { FakeRespNode, RespValue, digestOf, startFakeRespNode, useRedisNodes } from '../support';
import { valuesOnNodes } from './helpers';

describe('a node answering garbage next to 2 honest real nodes', () => {
  let fake: FakeRespNode;
  /** What the fake node answers to the acquire script in the current test. */
  let acquireReply: RespValue = 1;
  /** What it answers to the read-permits script (a semaphore's limit and free permits). */
  let readPermitsReply: RespValue = null;

  const nodes = useRedisNodes(2, {
    afterAll: async () => {
      await fake?.close();
    },
    flushAfterEach: false,
  });

  beforeAll(async () => {
    fake = await startFakeRespNode((command, args) => {
      // By digest, or in full (a connection's first call of a script, and the re-send after NOSCRIPT).
      const sha = digestOf(command, args[0]);
      if (sha === READ_PERMITS_SCRIPT.sha) return readPermitsReply;
      if (sha === ACQUIRE_SCRIPT.sha) return acquireReply;
      return command === 'eval' ? 'garbage' : undefined;
    });
  });

  /** A plausible server time (ms), so each case below breaks only the field it names. */
  const T = 1_700_000_000_000;

  it.each<[string, RespValue]>([
    ['a token "abc"', [1, 'abc', T]],
    ['a token "1e400"', [1, '1e400', T]],
    ['a token "1e300"', [1, '1e300', T]],
    ['a token beyond 2^53', [1, '99999999999999999', T]],
    ['a negative token', [1, '-5', T]],
    ['a token 0 although a token was asked for', [1, 0, T]],
    ['a busy ttl "abc"', [0, 'abc', T]],
    ['a refused uptime "x"', [2, 'x']],
    ['a grant without its time', [1, '5']],
    ['a grant whose time is "soon"', [1, '5', 'soon']],
    ['a grant whose time is negative', [1, '5', -1]],
    ['a busy answer whose time is nil', [0, 5, null]],
    ["an earlier waiter's turn of 0 ms", [6, 0, T]],
    ['a place in the queue of 0', [6, 5, T, 0]],
    ['a grant with a place in the queue', [1, '5', T, 1]],
    ['an earlier waiter\'s turn of "soon"', [6, 'soon', T]],
    ['nil', null],
    ['a one-element array', [1]],
    ['a four-element array', [1, '5', T, 6]],
    ['an unknown code', [7, 1, T]],
    ['a plain 1 although a token was asked for', 1],
    ['a string', 'OK'],
  ])(
    '%s: that node is an error vote, the lock and its token come from the honest nodes',
    async (_, reply) => {
      acquireReply = reply;
      const resource = `hostile:${JSON.stringify(reply)}`;
      const redlock = new Redlock([...nodes.urls, fake.url], {
        logger: false,
        restartGuard: false,
        fencing: true,
        // Every answer must come back as an answer (the garbage included), not as a timeout on a loaded machine.
        nodeTimeout: 2_000,
      });
      const errors: { node: string; operation: string; error: Error }[] = [];
      redlock.on('node-error', (event) => errors.push(event));
      try {
        await redlock.connect(2_000);
        const lock = await redlock.acquire(resource, { wait: 0 });
        const token = lock.fencingToken!;
        expect(Number.isSafeInteger(token)).toBe(true);
        expect(token).toBeGreaterThan(0);
        // The write-back reached the honest counters with the honest token, nothing the fake node said.
        expect(await valuesOnNodes(nodes, `redlock:{${resource}}:fence`)).toEqual([
          String(token),
          String(token),
        ]);
        const acquireErrors = errors.filter((e) => e.operation === 'acquire');
        expect(acquireErrors).toHaveLength(1);
        expect(acquireErrors[0].node).toBe(`127.0.0.1:${fake.port}`);
        expect(acquireErrors[0].error.message).toContain(
          `127.0.0.1:${fake.port} answered the acquire script with ${JSON.stringify(reply)}: `,
        );
        await (
          await lock.release()
        ).settled;
        // The fake node's release answer ('garbage') is its error too, not a count.
        expect(
          errors.some(
            (e) => e.operation === 'release' && /expected a count from 0 to 1/.test(e.error.message),
          ),
        ).toBe(true);
      } finally {
        await redlock.quit();
      }
    },
  );

  it.each<[string, RespValue]>([
    ['nil', null],
    ['a limit alone', 3],
    ['flags for 2 permits of 3', [3, '11']],
    ['flags that are not 0 or 1', [3, '1x1']],
    ['a limit "many"', ['many', '111']],
    ['a limit of -2', [-2, '111']],
    ['flags as an array', [3, [1, 1, 1]]],
  ])(
    'a semaphore read answered with %s: that node is an error vote, the permit comes from the honest nodes',
    async (_, reply) => {
      readPermitsReply = reply;
      acquireReply = 'garbage';
      const resource = `hostile-permits:${JSON.stringify(reply)}`;
      const redlock = new Redlock([...nodes.urls, fake.url], { logger: false, restartGuard: false });
      const errors: { node: string; operation: string; error: Error }[] = [];
      const readErrorsOf = () => errors.filter((e) => /the read-permits script/.test(e.error.message));
      // The read decides on a quorum of the honest nodes: the garbage may be checked after the grant.
      let readErrorSeen!: () => void;
      const readError = new Promise<void>((resolve) => (readErrorSeen = resolve));
      redlock.on('node-error', (event) => {
        errors.push(event);
        if (readErrorsOf().length > 0) readErrorSeen();
      });
      try {
        await redlock.connect(2_000);
        const lock = await redlock.acquire(resource, { permits: 3, wait: 0 });
        expect(lock.permit).toBeGreaterThanOrEqual(0);
        await readError;
        const readErrors = readErrorsOf();
        expect(readErrors).toHaveLength(1);
        expect(readErrors[0].node).toBe(`127.0.0.1:${fake.port}`);
        expect(readErrors[0].error.message).toContain(
          `answered the read-permits script with ${JSON.stringify(reply)}`,
        );
        await (
          await lock.release()
        ).settled;
      } finally {
        await redlock.quit();
      }
    },
  );
});
