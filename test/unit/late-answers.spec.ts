import Redis from 'ioredis';
import { AcquireReply, LockNode, Redlock } from '../../lib';

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

/** A node that answers every acquire the same way and records how each release was marked. */
class RecordingNode implements LockNode {
  readonly ordered = true;
  readonly releases: ('before retry' | 'final')[] = [];

  constructor(
    readonly name: string,
    private readonly reply: AcquireReply,
  ) {}

  async acquire(): Promise<AcquireReply> {
    return this.reply;
  }
  async fence(): Promise<boolean> {
    return true;
  }
  async extend(): Promise<boolean> {
    return true;
  }
  async release(_keys: readonly string[], _owner: string, beforeRetry?: boolean): Promise<number> {
    this.releases.push(beforeRetry ? 'before retry' : 'final');
    return 1;
  }
}

describe('which releases are marked as followed by a retry of the same owner value', () => {
  it('only those between two attempts; the last one of a failed acquisition and release() are final', async () => {
    const busy: AcquireReply = { outcome: 'busy', holderTtl: 10_000 };
    const free = new RecordingNode('a:1', { outcome: 'acquired', token: 0 });
    const nodes = [free, new RecordingNode('b:1', busy), new RecordingNode('c:1', busy)];
    const redlock = new Redlock(nodes, { logger: false, restartGuard: false, retryDelay: 5 });
    await expect(redlock.acquire('contended', { wait: 60 })).rejects.toThrow(/held by another owner/);
    const attempts = free.releases.length;
    expect(attempts).toBeGreaterThan(1); // the scenario happened: it retried
    expect(free.releases).toEqual([...Array(attempts - 1).fill('before retry'), 'final']);

    const winner = new Redlock([free], { logger: false, restartGuard: false });
    free.releases.length = 0;
    await winner.release(await winner.acquire('free'));
    expect(free.releases).toEqual(['final']);
    await Promise.all([redlock.quit(), winner.quit()]);
  });
});
