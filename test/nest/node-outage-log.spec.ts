import { LoggerService } from '@nestjs/common';
import { AcquireReply, RedlockModule, RedlockService } from '../../lib';
import { CountingNode } from '../core/helpers';
import { closeApps, createApp } from './helpers';

/** A node that grants everything, or fails every command while `down`. */
class SwitchableNode extends CountingNode {
  down = false;
  override async acquire(): Promise<AcquireReply> {
    if (this.down) throw new Error('connect ECONNREFUSED');
    return super.acquire();
  }
  override async release(): Promise<number> {
    if (this.down) throw new Error('connect ECONNREFUSED');
    return super.release();
  }
}

/**
 * The module's log of a failing node (issue "nothing left behind" §4): one warning when it starts failing,
 * saying what to check, none for its next errors, and one line when it answers again, with the count.
 */
describe('node outages in the log: one line when a node goes bad, one when it is back', () => {
  afterEach(() => closeApps());

  async function appOver(nodes: SwitchableNode[]) {
    const warnings: string[] = [];
    const logger: LoggerService = {
      log: () => undefined,
      error: () => undefined,
      warn: (m) => warnings.push(m),
    };
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes, { logger, restartGuard: false, nodeTimeout: 500 })],
    });
    const service = app.get(RedlockService);
    const events: string[] = [];
    service.on('node-error', ({ node }) => events.push(`error ${node}`));
    service.on('node-recovered', ({ node, errors }) => events.push(`recovered ${node} after ${errors}`));
    return { service, warnings, events };
  }

  it('warns once for 10 failed commands, then says once that the node answers again, with the count', async () => {
    const nodes = ['a:1', 'b:1', 'c:1'].map((name) => new SwitchableNode(name));
    const { service, warnings, events } = await appOver(nodes);
    nodes[2].down = true;
    for (let i = 0; i < 5; i++) await service.using(`outage:${i}`, async () => undefined);
    expect(events.filter((e) => e === 'error c:1')).toHaveLength(10); // acquire + release, 5 times
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^Redis node c:1 failed an (acquire|release): connect ECONNREFUSED\. Check that/,
    );
    expect(warnings[0]).toMatch(/a line says when it answers again\.$/);

    nodes[2].down = false;
    await service.using('outage:back', async () => undefined);
    expect(events.filter((e) => e.startsWith('recovered'))).toEqual(['recovered c:1 after 10']);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toMatch(/^Redis node c:1 answers again, after 10 failed commands over \d+\.\d s\.$/);
    // Well again: its answers log nothing more.
    await service.using('outage:well', async () => undefined);
    expect(warnings).toHaveLength(2);
  });

  it('does not warn again when the node fails again soon after it came back (a flapping node)', async () => {
    const nodes = ['a:1', 'b:1', 'c:1'].map((name) => new SwitchableNode(name));
    const { service, warnings, events } = await appOver(nodes);
    for (let round = 0; round < 4; round++) {
      nodes[0].down = true;
      await service.using(`flap:${round}`, async () => undefined);
      nodes[0].down = false;
      await service.using(`flap:${round}:up`, async () => undefined);
    }
    // Control: the core saw four outages and four recoveries...
    expect(events.filter((e) => e.startsWith('recovered a:1'))).toHaveLength(4);
    // ... the log said the first outage and its end only.
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/^Redis node a:1 failed/);
    expect(warnings[1]).toMatch(/^Redis node a:1 answers again, after 2 failed commands/);
  });
});
