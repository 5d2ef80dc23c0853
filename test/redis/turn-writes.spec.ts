import * as net from 'node:net';
import type { Redis } from 'ioredis';
import { closeAll, eventually, redlockOn } from '../core/helpers';
import { useRedisNodes } from '../support';

/** Socket writes and the commands they carried, counted on every socket of this process while `run` runs. */
async function countWrites(run: () => Promise<void>): Promise<{ writes: number; commands: number }> {
  const proto = net.Socket.prototype as unknown as {
    _writeGeneric(writev: boolean, data: unknown, encoding: unknown, callback: unknown): unknown;
  };
  const original = proto._writeGeneric;
  let writes = 0;
  let commands = 0;
  proto._writeGeneric = function (this: unknown, writev, data, encoding, callback) {
    writes++;
    // A corked socket hands its buffered chunks over in one writev; the library writes one command per chunk.
    commands += writev ? (data as unknown[]).length : 1;
    return original.call(this, writev, data, encoding, callback);
  };
  try {
    await run();
  } finally {
    proto._writeGeneric = original;
  }
  return { writes, commands };
}

async function keysOn(admin: Redis, pattern: string): Promise<string[]> {
  try {
    return await admin.keys(pattern);
  } finally {
    admin.disconnect();
  }
}

/**
 * Under load, the calls made in one turn of the event loop leave each socket together, a write per 64 KiB (the socket is
 * corked until `setImmediate`), each still its own command with its own answer; while few calls are in flight
 * each leaves at once (no added latency for sequential use).
 */
describe('calls made in one turn share a socket write', () => {
  const nodes = useRedisNodes(3);
  afterEach(closeAll);

  it('many concurrent acquisitions: far fewer writes than commands, every lock granted and released', async () => {
    const redlock = await redlockOn(nodes);
    const counted = await countWrites(async () => {
      const locks = await Promise.all(Array.from({ length: 60 }, (_, i) => redlock.acquire(`turn:${i}`)));
      const released = await Promise.all(locks.map((lock) => lock.release()));
      // A release resolves once a quorum deleted the key; the third node's delete is checked below.
      expect(released.filter((result) => result.releasedOn < 2)).toEqual([]);
    });
    const left = async (): Promise<number> =>
      (await Promise.all(nodes.nodes.map((node) => keysOn(node.redis(), 'redlock:{turn:*')))).flat().length;
    expect(await eventually(async () => (await left()) === 0)).toBe(true);
    // 60 acquires and 60 releases on 3 nodes: 360 commands.
    expect(counted.commands).toBe(360);
    expect(counted.writes).toBeLessThan(counted.commands / 4);
  });

  it('a burst of 5,000 releases in one turn: each resolves on a quorum, none counted as timed out', async () => {
    const redlock = await redlockOn(nodes);
    const locks = [];
    for (let from = 0; from < 5_000; from += 250)
      locks.push(
        ...(await Promise.all(
          Array.from({ length: 250 }, (_, i) => redlock.acquire(`turn:burst:${from + i}`)),
        )),
      );
    // One turn issues every release (15,000 commands, longer than the 50 ms node timeout): held back until the
    // turn ends, the nodes would start on them after every timeout had run.
    const results = await Promise.all(locks.map((lock) => lock.release()));
    const timedOut = results.filter((result) => result.votes.some((vote) => vote.outcome === 'timeout'));
    expect({ timedOut: timedOut.length, short: results.filter((r) => r.releasedOn < 2).length }).toEqual({
      timedOut: 0,
      short: 0,
    });
  });

  it("with a test's fake timers installed (they fake setImmediate), concurrent calls are still written", async () => {
    const redlock = await redlockOn(nodes);
    // The timers only: a frozen Date would read as a clock step of the nodes (docs/DESIGN.md §17).
    jest.useFakeTimers({ doNotFake: ['Date', 'performance', 'hrtime'] });
    try {
      // Answers come by I/O alone: a socket left corked until a faked setImmediate would never send them.
      const locks = await Promise.all(
        Array.from({ length: 60 }, (_, i) => redlock.acquire(`turn:fake:${i}`)),
      );
      await Promise.all(locks.map((lock) => lock.release()));
      expect(locks).toHaveLength(60);
    } finally {
      jest.useRealTimers();
    }
  });

  it('control: sequential calls leave one write each', async () => {
    const redlock = await redlockOn(nodes);
    const counted = await countWrites(async () => {
      for (let i = 0; i < 10; i++) await (await redlock.acquire(`turn:seq:${i}`)).release();
    });
    expect(counted).toEqual({ writes: 60, commands: 60 });
  });
});
