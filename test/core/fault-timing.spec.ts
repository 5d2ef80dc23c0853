import { QuorumUnavailableError } from '../../lib';
import type { AcquireReply, AcquireRequest } from '../../lib';
import { RedlockCore } from '../../lib/core';
import { VirtualClock } from './virtual-clock';
import { MemoryNode } from './virtual-nodes';

/**
 * A {@link MemoryNode} that can be paused like a Redis server (SIGSTOP): commands sent meanwhile are kept, in
 * order, and run when it resumes, at the time it resumes.
 */
class PausableNode extends MemoryNode {
  private paused = false;
  private readonly queued: (() => void)[] = [];
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
    for (const run of this.queued.splice(0)) run();
  }
  private gate<T>(run: () => Promise<T>): Promise<T> {
    if (!this.paused) return run();
    return new Promise<T>((resolve, reject) => this.queued.push(() => void run().then(resolve, reject)));
  }
  override acquire(request: AcquireRequest): Promise<AcquireReply> {
    return this.gate(() => super.acquire(request));
  }
  override release(keys: readonly string[], owner: string): Promise<number> {
    return this.gate(() => super.release(keys, owner));
  }
}

/**
 * The timing of faults.spec.ts's scenarios, decided on a virtual clock over five in-memory nodes (moved from
 * there, where it slept on the real clock over paused real nodes).
 */
describe('node faults, timing (virtual clock, 5 in-memory nodes)', () => {
  it('answers that arrive after the ttl give a failure, never an expired lock', async () => {
    const clock = new VirtualClock();
    const nodes = ['a', 'b', 'c', 'd', 'e'].map((name) => new PausableNode(`${name}:1`, clock));
    // A generous per-node timeout, so the late answers still count towards the quorum.
    const redlock = new RedlockCore(
      nodes,
      { logger: false, restartGuard: false, nodeTimeout: 5_000 },
      { clock },
    );
    const ttl = 150;
    for (const i of [0, 1, 2]) nodes[i].pause();
    const attempt = redlock.acquire('slow', { ttl, wait: 0 }).catch((e: unknown) => e);
    await clock.advance(ttl + 100);
    for (const i of [0, 1, 2]) nodes[i].resume();
    const error = await attempt;
    expect(error).toBeInstanceOf(QuorumUnavailableError);
    expect((error as Error).message).toMatch(/leaving no validity/);
    // Every key it wrote was removed again (the releases sent without waiting have run).
    await clock.advance(0);
    expect(nodes.map((node) => node.valueOf('redlock:{slow}')).every((v) => v === null)).toBe(true);
  });
});
