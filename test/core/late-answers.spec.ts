import Redis from 'ioredis';
import { AcquireReply, AcquireRequest, LockNode, Redlock } from '../../lib';

/**
 * A node that counts releases and can hold back its acquire answer. Pure bookkeeping of the core (which
 * release it sends when), so no Redis is involved; what Redis does with them is covered by test/core.
 */
class ScriptedNode implements LockNode {
  releases = 0;
  private heldBack: (() => void) | undefined;

  constructor(
    readonly name: string,
    readonly ordered: boolean,
    private readonly answerLate: boolean,
  ) {}

  acquire(): Promise<AcquireReply> {
    const acquired: AcquireReply = { outcome: 'acquired', token: 0 };
    if (!this.answerLate) return Promise.resolve(acquired);
    return new Promise((resolve) => (this.heldBack = () => resolve(acquired)));
  }
  async fence(): Promise<boolean> {
    return true;
  }
  async extend(): Promise<boolean> {
    return true;
  }
  async release(): Promise<number> {
    this.releases++;
    return 1;
  }
  /** Delivers the held-back "acquired" answer now. */
  answer(): void {
    this.heldBack?.();
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('an "acquired" answer that arrives after the lock was released', () => {
  it.each([
    [true, 1],
    [false, 2],
  ])('ordered %s: the late node gets %i release(s)', async (ordered, expected) => {
    const late = new ScriptedNode('c:1', ordered, true);
    const nodes = [new ScriptedNode('a:1', ordered, false), new ScriptedNode('b:1', ordered, false), late];
    const redlock = new Redlock(nodes, { logger: false, restartGuard: false, nodeTimeout: 1_000 });

    const lock = await redlock.acquire('late-answer');
    await redlock.release(lock);
    expect(late.releases).toBe(1); // the release fan-out reaches every node

    late.answer();
    await settle();
    // Ordered: the release already sent after the acquire undoes it. Unordered: it may have run first, so
    // the late "acquired" is undone by a release of its own.
    expect(late.releases).toBe(expected);
    expect(nodes[0].releases).toBe(1);
    await redlock.quit();
  });

  it('only nodes over clients the library creates count as ordered (a client passed in may replay commands)', async () => {
    const passedIn = new Redis({ host: '127.0.0.1', port: 2, lazyConnect: true });
    const redlock = new Redlock([{ host: '127.0.0.1', port: 1, lazyConnect: true }, passedIn], {
      logger: false,
    });
    expect(redlock.nodes.map((node) => node.ordered)).toEqual([true, false]);
    await redlock.quit();
    passedIn.disconnect();
  });
});

/** A node that answers every acquire the same way and records the owner value of each call. */
class RecordingNode implements LockNode {
  readonly ordered = true;
  readonly calls: { readonly op: 'acquire' | 'release'; readonly owner: string }[] = [];

  constructor(
    readonly name: string,
    private readonly reply: AcquireReply,
  ) {}

  async acquire(request: AcquireRequest): Promise<AcquireReply> {
    this.calls.push({ op: 'acquire', owner: request.owner });
    return this.reply;
  }
  async fence(): Promise<boolean> {
    return true;
  }
  async extend(): Promise<boolean> {
    return true;
  }
  async release(_keys: readonly string[], owner: string): Promise<number> {
    this.calls.push({ op: 'release', owner });
    return 1;
  }
}

/** Owner values written again after a release of them was sent: what DESIGN §7 rules out. */
function rewrittenAfterRelease(calls: RecordingNode['calls']): string[] {
  const released = new Set<string>();
  const found: string[] = [];
  for (const call of calls) {
    if (call.op === 'release') released.add(call.owner);
    else if (released.has(call.owner)) found.push(call.owner);
  }
  return found;
}

describe('every attempt of an acquisition writes an owner value of its own (docs/DESIGN.md §7)', () => {
  async function contend(internals: { unsafeReuseOwner?: boolean }) {
    const busy: AcquireReply = { outcome: 'busy', holderTtl: 10_000 };
    const free = new RecordingNode('a:1', { outcome: 'acquired', token: 0 });
    const nodes = [free, new RecordingNode('b:1', busy), new RecordingNode('c:1', busy)];
    const redlock = new Redlock(nodes, { logger: false, restartGuard: false, retryDelay: 5 }, internals);
    await expect(redlock.acquire('contended', { wait: 60 })).rejects.toThrow(/held by another owner/);
    await redlock.quit();
    return free.calls;
  }

  it('a failed attempt is released under its own value, which no later attempt writes again', async () => {
    const calls = await contend({});
    const acquires = calls.filter((call) => call.op === 'acquire').map((call) => call.owner);
    expect(acquires.length).toBeGreaterThan(1); // the scenario happened: it retried
    expect(new Set(acquires).size).toBe(acquires.length);
    expect(rewrittenAfterRelease(calls)).toEqual([]);
    // Each attempt's value is released once, after its acquire.
    const releases = calls.filter((call) => call.op === 'release').map((call) => call.owner);
    expect(releases).toEqual(acquires);
  });

  it('negative control: with the owner value reused across attempts, the checker finds rewrites', async () => {
    const calls = await contend({ unsafeReuseOwner: true });
    expect(rewrittenAfterRelease(calls).length).toBeGreaterThan(0);
  });

  it("the lock carries the winning attempt's value; release() deletes that one", async () => {
    const node = new RecordingNode('a:1', { outcome: 'acquired', token: 0 });
    const winner = new Redlock([node], { logger: false, restartGuard: false });
    const lock = await winner.acquire('free');
    await winner.release(lock);
    expect(node.calls).toEqual([
      { op: 'acquire', owner: lock.value },
      { op: 'release', owner: lock.value },
    ]);
    await winner.quit();
  });
});
