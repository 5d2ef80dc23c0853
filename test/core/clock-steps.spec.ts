import {
  InvalidArgumentError,
  type Lock,
  MemoryNode,
  QuorumUnavailableError,
  Redlock,
  type RedlockOptions,
  memoryNodes,
} from '../../lib';

/**
 * A minority node whose wall clock steps while a lock is held (docs/DESIGN.md §17), on in-memory nodes that
 * expire keys by their own wall clock as Redis does. A holds on nodes 1–3 of 5; B, which has talked to every
 * node, asks again after node 1 stepped: node 1's copy of A's key expired early, so 1, 4 and 5 would make a
 * quorum for B while A's lock is still valid. Each scenario runs with the detection off as its negative control.
 */
describe('clock steps on a minority node', () => {
  const TTL = 10_000;
  const instances: Redlock[] = [];
  let nodes: MemoryNode[];

  function instance(options: RedlockOptions = {}): Redlock {
    const redlock = new Redlock(nodes, {
      logger: false,
      owner: `app${instances.length}`,
      ttl: TTL,
      ...options,
    });
    instances.push(redlock);
    return redlock;
  }

  beforeEach(() => {
    nodes = memoryNodes(5);
  });

  afterEach(async () => {
    await Promise.all(instances.splice(0).map((redlock) => redlock.quit()));
    jest.useRealTimers();
  });

  /** A holds `r` on nodes 1–3 only (4 and 5 unreachable meanwhile); B has seen every node answer busy. */
  async function heldOnThreeOfFive(detectClockSteps: boolean): Promise<{ a: Lock; b: Redlock }> {
    const a = instance();
    const b = instance({ detectClockSteps });
    nodes[3].down = true;
    nodes[4].down = true;
    const lock = await a.acquire('r');
    nodes[3].down = false;
    nodes[4].down = false;
    expect(await b.tryAcquire('r')).toBeNull();
    return { a: lock, b };
  }

  it('a forward step past the ttl: node 1 grants, its grant does not count, B does not get the lock', async () => {
    const { a, b } = await heldOnThreeOfFive(true);
    const seen: { node: string; step: number }[] = [];
    b.on('clock-step', (event) => seen.push(event));
    nodes[0].stepClock(2 * TTL);
    expect(nodes[0].peek('redlock:r')).toBeUndefined();
    await expect(b.acquire('r', { wait: 0 })).rejects.toThrow(
      /memory-1 refused \(its clock stepped forward by \d+ ms \d+ ms ago, refuses for \d+ ms more\); memory-2 busy/,
    );
    expect(seen).toHaveLength(1);
    expect(seen[0].node).toBe('memory-1');
    expect(seen[0].step).toBeGreaterThanOrEqual(2 * TTL - 5);
    expect(a.remainingTime).toBeGreaterThan(0);
    // B's failed attempt left nothing of its own on node 1, the one that granted.
    expect(nodes[0].keys()).toEqual([]);
  });

  it('negative control: with the detection off, the same step hands B the lock A still holds', async () => {
    const { a, b } = await heldOnThreeOfFive(false);
    nodes[0].stepClock(2 * TTL);
    const second = await b.acquire('r', { wait: 0 });
    expect(a.remainingTime).toBeGreaterThan(0);
    expect(second.remainingTime).toBeGreaterThan(0);
  });

  it('a backward step is a step too: the failure names the node, its step and what to do', async () => {
    const { a, b } = await heldOnThreeOfFive(true);
    await a.release();
    nodes[0].stepClock(-3_000);
    nodes[3].down = true;
    nodes[4].down = true;
    const failure = await b.acquire('r', { wait: 0 }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(QuorumUnavailableError);
    const message = (failure as Error).message;
    expect(message).toMatch(
      /memory-1 refused \(its clock stepped back by \d+ ms \d+ ms ago, refuses for \d+ ms more\)/,
    );
    expect(message).toMatch(/slews the clock instead of stepping it/);
  });

  it('inspect() and probe() show the step; the node takes part again one window later', async () => {
    jest.useFakeTimers();
    const { b } = await heldOnThreeOfFive(true);
    nodes[0].stepClock(2 * TTL);
    await expect(b.tryAcquire('r')).resolves.toBeNull();
    const view = await b.inspect('r');
    expect(view.nodes[0].clock?.lastStep?.step).toBeGreaterThan(2 * TTL - 5);
    const health = await b.probe();
    expect(health.nodes[0].guardRemaining).toBeGreaterThan(0);
    expect(health.nodes[0].clock?.lastStep).toBeDefined();
    expect(health.nodes[1].guardRemaining).toBe(0);
    jest.advanceTimersByTime(TTL + 1);
    expect((await b.probe()).nodes[0].guardRemaining).toBe(0);
    // A's lock has expired everywhere by now: node 1 counts again and B gets the lock.
    await expect(b.acquire('r', { wait: 0 })).resolves.toBeDefined();
  });

  it('not covered, as documented: an instance with no sample of the node counts its first grant', async () => {
    const { a } = await heldOnThreeOfFive(true);
    nodes[0].stepClock(2 * TTL);
    const fresh = instance();
    const second = await fresh.acquire('r', { wait: 0 });
    expect(a.remainingTime).toBeGreaterThan(0);
    expect(second.remainingTime).toBeGreaterThan(0);
  });

  it('a step inside a restart-guard window: the guard is fooled by the longer uptime, the detection is not', async () => {
    jest.useFakeTimers();
    nodes = memoryNodes(5, { restartGuard: true });
    jest.advanceTimersByTime(TTL + 1_000);
    for (const detectClockSteps of [true, false]) {
      const b = instance({ detectClockSteps });
      await b.acquire(`warm-${detectClockSteps}`).then((lock) => lock.release());
    }
    const [checked, unchecked] = instances.slice(-2);
    // Nodes 1–3 restart empty; 1 also steps forward past the window, so its uptime looks long enough.
    for (const node of nodes.slice(0, 3)) node.loseData();
    nodes[0].stepClock(TTL + 2_000);
    nodes[1].down = true;
    // Only nodes 1, 4 and 5 could make a quorum: 1 must not count yet.
    await expect(checked.acquire('x', { wait: 0 })).rejects.toThrow(/its clock stepped forward/);
    await expect(unchecked.acquire('x', { wait: 0 })).resolves.toBeDefined();
  });

  it('the option is validated', () => {
    expect(() => instance({ detectClockSteps: 'yes' as never })).toThrow(InvalidArgumentError);
    expect(() => instance({ detectClockSteps: 'yes' as never })).toThrow(/detectClockSteps/);
  });
});
