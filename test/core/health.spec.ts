import { useRedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';

describe('health probe (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeAll, flushAfterEach: false });

  it('is healthy while a quorum answers, with per-node latency and errors; unhealthy without a quorum', async () => {
    const redlock = await redlockOn(nodes);
    const all = await redlock.probe(500);
    expect(all.healthy).toBe(true);
    expect(all.nodes.every((n) => n.up && typeof n.latency === 'number' && n.guardRemaining === 0)).toBe(
      true,
    );

    await nodes.nodes[0].kill();
    const one = await redlock.probe(500);
    expect(one.healthy).toBe(true);
    expect(one.nodes[0]).toMatchObject({ up: false, error: expect.any(String) });

    await nodes.nodes[1].pause();
    const two = await redlock.probe(200);
    expect(two.healthy).toBe(false);
    expect(two.nodes[1]).toEqual({
      node: `127.0.0.1:${nodes.nodes[1].port}`,
      up: false,
      error: 'no answer within 200 ms',
    });
    await nodes.nodes[1].resume();
    await nodes.nodes[0].start();
  });

  it('reports nodes inside their restart-guard window as not usable yet', async () => {
    const guarded = await redlockOn(nodes, { restartGuard: 60_000 });
    const report = await guarded.probe(500);
    expect(report.healthy).toBe(false);
    expect(report.nodes.every((n) => n.up && (n.guardRemaining ?? 0) > 0)).toBe(true);
  });
});
