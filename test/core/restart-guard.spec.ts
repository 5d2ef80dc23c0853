import { QuorumUnavailableError } from '../../lib';
import { ACQUIRE_SCRIPT, type ScriptCall, acquireCall } from '../../lib/redis/scripts';
import { NodeCommands, acquireOn, useRedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';
import { NodeCalls } from './node-calls';

/** The window of these tests: locks live at most this long, and a restarted node refuses for as long. */
const WINDOW = 2_000;

/** An acquire request for `key` with the guard at WINDOW and the default boot marker, sent as a raw call. */
const guardedRequest = (key: string) => ({
  keys: [key],
  fenceKeys: [],
  owner: 'o',
  ttl: WINDOW,
  guardWindow: WINDOW,
  guardKey: 'redlock:!boot',
});

describe('restart guard (5 real nodes)', () => {
  const nodes = useRedisNodes(5, {
    afterEach: async () => {
      await closeAll();
      for (const node of nodes.nodes) if (node.paused) await node.resume();
    },
    flushAfterEach: false,
    // The guard counts whole seconds of uptime: the fresh nodes grow out of the window first.
    pastGuard: WINDOW,
  });

  /**
   * A holds a lock on nodes {0,1,2} (3 and 4 paused); node 0 restarts empty; B tries through {0,3,4}
   * (1 and 2 paused). Resolves B's outcome while A's lock is still valid.
   */
  async function scenario(bGuard: boolean) {
    // A's own guard is beside the point (B's is under test), and would make the second scenario wait out the
    // window of the node the first one restarted.
    const a = await redlockOn(nodes, { ttl: WINDOW, restartGuard: false });
    const b = await redlockOn(nodes, { ttl: WINDOW, restartGuard: bGuard ? WINDOW : false, nodeTimeout: 50 });
    const resource = `guarded:${bGuard}`;
    const aCalls = new NodeCalls(a.nodes);
    await nodes.nodes[3].pause();
    await nodes.nodes[4].pause();
    const held = await a.acquire(resource, { wait: 3_000 });
    await nodes.nodes[3].resume();
    await nodes.nodes[4].resume();
    // A's SETs were still queued on the paused nodes and land now (once both answered); remove them so A holds
    // exactly {0,1,2} (as when those packets were lost).
    await aCalls.until(() => aCalls.everyAnswered('acquire', 1, [3, 4]));
    for (const i of [3, 4]) {
      const admin = nodes.nodes[i].redis();
      await admin.del(`redlock:{${resource}}`);
      admin.disconnect();
    }

    await nodes.nodes[0].restartEmpty();
    await b.connect(2_000); // B's client reconnects to the restarted node
    await nodes.nodes[1].pause();
    await nodes.nodes[2].pause();
    const outcome = await b.acquire(resource, { wait: 0 }).catch((e: unknown) => e);
    const aStillValid = held.remainingTime > 0;
    await nodes.nodes[1].resume();
    await nodes.nodes[2].resume();
    return { outcome, aStillValid, restarted: nodes.nodes[0].url.replace('redis://', '') };
  }

  it('a node that restarted empty refuses locks during the window: the second client fails, naming the node', async () => {
    const { outcome, aStillValid, restarted } = await scenario(true);
    expect(aStillValid).toBe(true);
    expect(outcome).toBeInstanceOf(QuorumUnavailableError);
    const error = outcome as QuorumUnavailableError;
    expect(error.votes.find((v) => v.node === restarted)).toMatchObject({ outcome: 'refused' });
    expect(error.message).toMatch(
      new RegExp(`${restarted} refused \\(restart guard: up \\d+ ms, refuses for \\d+ ms more\\)`),
    );
    expect(error.message).toContain('For development and tests with fresh nodes, set restartGuard: false.');
  });

  it('negative control: with the guard off, the same scenario grants the lock to a second holder', async () => {
    const { outcome, aStillValid } = await scenario(false);
    expect(aStillValid).toBe(true);
    expect(outcome).not.toBeInstanceOf(Error); // two holders at once: the violation the guard prevents
    expect((outcome as { resources: string[] }).resources).toEqual(['guarded:false']);
  });

  it('a restart that restored an old boot marker from disk is refused too (the run_id changed)', async () => {
    const a = await redlockOn(nodes, { ttl: WINDOW, restartGuard: WINDOW });
    const first = await a.acquire('marker', { wait: 3_000 }); // writes the marker on every node
    await first.release();
    const admin = nodes.nodes[3].redis();
    const oldMarker = await admin.get('redlock:!boot');
    admin.disconnect();
    expect(oldMarker).toMatch(/^[0-9a-f]{40}:\d+$/);

    await nodes.nodes[3].restartEmpty();
    const restored = nodes.nodes[3].redis();
    await restored.set('redlock:!boot', oldMarker!); // as if AOF/RDB had brought it back
    await a.connect(2_000);
    // The client learns the new run_id on its new connection (INFO, read without holding up connect()).
    const restartedNode = a.nodes[3] as unknown as { learning: Promise<void>; serverId: string };
    await restartedNode.learning;
    const newRunId = /run_id:(\w+)/.exec(await restored.info('server'))![1];
    expect(restartedNode.serverId).toBe(newRunId);
    restored.disconnect();
    await nodes.nodes[0].pause();
    await nodes.nodes[1].pause();
    const outcome = await a.acquire('marker', { wait: 0 }).catch((e: unknown) => e);
    await nodes.nodes[0].resume();
    await nodes.nodes[1].resume();
    expect(outcome).toBeInstanceOf(QuorumUnavailableError);
    expect((outcome as QuorumUnavailableError).votes[3]).toMatchObject({ outcome: 'refused' });
  });

  it('reads the server uptime once per node and restart, and TIME only for the clock sample of each answer', async () => {
    const a = await redlockOn(nodes, { ttl: WINDOW, restartGuard: WINDOW });
    await a.acquire('warm-up', { wait: 3_000 }).then((lock) => lock.release());
    const calls = async () => {
      const admin = nodes.nodes[4].redis(); // never restarted in this file: past the window since beforeAll
      try {
        const stats = await admin.info('commandstats');
        const count = (command: string) =>
          Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
        return { info: count('info'), time: count('time') };
      } finally {
        admin.disconnect();
      }
    };
    const before = await calls();
    for (let i = 0; i < 50; i++) await (await a.acquire(`fast:${i}`)).release();
    const after = await calls();
    // The probes' own admin connections add a few INFO calls (ready check, commandstats); 50 acquisitions
    // that each ran INFO would add 50.
    expect(after.info - before.info).toBeLessThanOrEqual(5);
    // Each answer carries one TIME, the clock sample of docs/DESIGN.md §17. The client read an uptime past the
    // window when it connected: checking the boot marker's start time against the window would add a second.
    expect(after.time - before.time).toBe(50);
    // The counter's control: the same acquire without the client's word (uptime unknown) checks TIME twice.
    const admin = nodes.nodes[4].redis();
    try {
      const runId = /run_id:(\w+)/.exec(await admin.info('server'))![1];
      const call = acquireCall(guardedRequest('redlock:{control}'), runId, false, 'redlock:!boot', 0);
      for (let i = 0; i < 5; i++)
        await admin.eval(ACQUIRE_SCRIPT.source, call.keys.length, ...call.keys, ...call.args);
    } finally {
      admin.disconnect();
    }
    expect((await calls()).time - after.time).toBe(10);
  });

  it("the client's word that a server is old counts only beside that run_id's boot marker", async () => {
    await nodes.nodes[0].restartEmpty();
    const admin = nodes.nodes[0].redis();
    try {
      const runId = /run_id:(\w+)/.exec(await admin.info('server'))![1];
      const request = guardedRequest('redlock:{claimed-old}');
      // The client claims an uptime of ten windows for the server's real run_id (ARGV[7] = '2') ...
      const claim = acquireCall(request, runId, false, request.guardKey, 10 * WINDOW);
      expect(claim.args[6]).toBe(2);
      const answer = () => admin.eval(ACQUIRE_SCRIPT.source, claim.keys.length, ...claim.keys, ...claim.args);
      // ... but the node restarted empty: no boot marker, so INFO decides, and the uptime is below the window.
      expect(await answer()).toEqual([2, expect.any(Number)]);
      // A boot marker restored from disk names the earlier run: INFO decides again.
      await admin.set('redlock:!boot', `${'f'.repeat(40)}:${Date.now() - 3_600_000}`);
      expect(await answer()).toEqual([2, expect.any(Number)]);
      expect(await admin.exists('redlock:{claimed-old}')).toBe(0);
    } finally {
      admin.disconnect();
    }
  });

  it('a call without the data-age marker is decided by the boot marker, or answered {7} with nothing written', async () => {
    await nodes.nodes[0].restartEmpty();
    const admin = nodes.nodes[0].redis();
    try {
      const runId = /run_id:(\w+)/.exec(await admin.info('server'))![1];
      const request = guardedRequest('redlock:{no-since}');
      const slim = acquireCall(request, runId, false, request.guardKey, 10 * WINDOW, false);
      expect(slim.args[6]).toBe(4);
      expect(slim.keys).toEqual(['redlock:{no-since}', 'redlock:!boot']);
      const answer = (call: ScriptCall) =>
        admin.eval(ACQUIRE_SCRIPT.source, call.keys.length, ...call.keys, ...call.args);
      // No boot marker (restarted empty): the slow path needs the data-age marker, so the call is sent back.
      expect(await answer(slim)).toEqual([7]);
      expect(await admin.keys('*')).toEqual([]);
      // With it, the slow path decides (up for less than the window: refused).
      expect(await answer(acquireCall(request, runId, false, request.guardKey, 10 * WINDOW))).toEqual([
        2,
        expect.any(Number),
      ]);
      // A boot marker of this very run, started an hour ago: the fast path grants without the data-age marker.
      await admin.set('redlock:!boot', `${runId}:${Date.now() - 3_600_000}`);
      expect(await answer(slim)).toEqual([1, 0, expect.any(Number)]);
      expect(await admin.exists('redlock:!boot:since')).toBe(0);
    } finally {
      admin.disconnect();
    }
  });

  it('a node whose markers are gone (FLUSHALL, no restart) is asked again with the data-age marker', async () => {
    const a = await redlockOn(nodes, { ttl: WINDOW, restartGuard: WINDOW });
    await a.acquire('flushed:warm-up', { wait: 3_000 }).then((lock) => lock.release());
    const admin = nodes.nodes[4].redis(); // never restarted in this file: past the window since beforeAll
    const calls = new NodeCalls(a.nodes);
    try {
      await admin.flushall();
      await (await a.acquire('flushed:1', { wait: 3_000 })).release();
      // Node 4's acquire (one call to the core: sent again inside it) may come after the quorum's.
      await calls.until(() => calls.answered('acquire', 4, 'redlock:{flushed:1}') >= 1);
      // Only the slow path writes the markers, and only a call that named the data-age marker reaches it.
      expect(await admin.exists('redlock:!boot', 'redlock:!boot:since')).toBe(2);
    } finally {
      admin.disconnect();
    }
  });

  it('a second {7} after a grant: the node names the data-age marker in every call from then on', async () => {
    const a = await redlockOn(nodes, { ttl: WINDOW, restartGuard: WINDOW });
    await a.acquire('sticky:warm-up', { wait: 3_000 }).then((lock) => lock.release());
    const admin = nodes.nodes[4].redis();
    const calls = new NodeCalls(a.nodes);
    try {
      // Twice: the markers gone, and an acquire that writes them back through its second call (`{7}` first).
      for (const round of [1, 2]) {
        await admin.flushall();
        await (await a.acquire(`sticky:${round}`, { wait: 3_000 })).release();
        await calls.until(() => calls.answered('acquire', 4, `redlock:{sticky:${round}}`) >= 1);
      }
      const commands = await NodeCommands.open([nodes.nodes[4]]);
      try {
        await (await a.acquire('sticky:3', { wait: 3_000 })).release();
        await calls.until(() => calls.answered('acquire', 4, 'redlock:{sticky:3}') >= 1);
        // One call, naming the data-age marker: not a call without it answered `{7}` and sent again.
        const attempts = commands.commands(0, acquireOn('redlock:{sticky:3}'));
        expect(attempts).toHaveLength(1);
        expect(attempts[0]).toContain('redlock:!boot:since');
      } finally {
        commands.close();
      }
    } finally {
      admin.disconnect();
    }
  });

  it('a call with a larger window than the one that wrote the boot marker is still checked (no INFO)', async () => {
    await nodes.nodes[0].restartEmpty();
    const short = await redlockOn(nodes, { ttl: WINDOW, restartGuard: WINDOW, retryDelay: 100 });
    await nodes.nodes[1].pause();
    await nodes.nodes[2].pause();
    try {
      // Past the short window, node 0 takes part (writing its boot marker) ...
      const lock = await short.acquire('window:short', { wait: WINDOW + 2_000 });
      await lock.release();
      // ... but not for a lock whose window (its ttl) is three times longer: the marker keeps the boot time.
      const long = await short.acquire('window:long', { ttl: 3 * WINDOW, wait: 0 }).catch((e: unknown) => e);
      expect(long).toBeInstanceOf(QuorumUnavailableError);
      expect((long as QuorumUnavailableError).votes[0]).toMatchObject({ outcome: 'refused' });
    } finally {
      await nodes.nodes[1].resume();
      await nodes.nodes[2].resume();
    }
  });

  it('after the window the restarted node takes part again', async () => {
    await nodes.nodes[0].restartEmpty();
    const c = await redlockOn(nodes, { ttl: WINDOW, restartGuard: WINDOW, retryDelay: 100 });
    await nodes.nodes[1].pause();
    await nodes.nodes[2].pause();
    // Retries until node 0 has been up for the window (whole seconds), then locks through {0,3,4}.
    const lock = await c.acquire('after-window', { wait: WINDOW + 2_000 });
    expect(lock.attempts).toBeGreaterThan(1);
    await nodes.nodes[1].resume();
    await nodes.nodes[2].resume();
    await lock.release();
  });
});
