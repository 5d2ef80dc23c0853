import { once } from 'node:events';
import Redis from 'ioredis';
import type { LockNode } from '../../lib';
import { NodeCommands, acquireOn, useRedisNodes } from '../support';
import { closeAll, redlockOn, valuesOnNodes } from './helpers';
import { NodeCalls } from './node-calls';

/**
 * docs/DESIGN.md §15: a writer that stops waiting leaves no intent behind (issue "nothing left behind"). The
 * writer-starvation test of read-write.spec.ts shows writer preference still holds. The intent's ttl is made long here (maxRetryDelay 5 s: 20 s), so an intent that is gone was taken back, not expired.
 */
describe('writer intents are taken back when the writer stops waiting (3 real nodes)', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeAll });
  const LONG_INTENT = { maxRetryDelay: 5_000 };
  const intentOf = (resource: string) => valuesOnNodes(redisNodes, `redlock:{${resource}}:intent`);

  it('tryAcquire() and wait 0 on a busy lock write no intent at all', async () => {
    const holder = await redlockOn(redisNodes);
    const other = await redlockOn(redisNodes, { ...LONG_INTENT, owner: 'other' });
    const held = await holder.acquire('ti:a');
    expect(await other.tryAcquire('ti:a')).toBeNull();
    await expect(other.acquire('ti:a', { wait: 0 })).rejects.toThrow(/busy|held/i);
    // None of the other's (the holder's own, from an attempt of its that a loaded machine made late and that its
    // next one found, is taken back without being waited for: not this test's subject).
    expect((await intentOf('ti:a')).filter((value) => value?.endsWith(':other'))).toEqual([]);
    // A reader is let in at once once the holder released: nobody is waiting to write.
    await held.release();
    const reader = await other.tryAcquire('ti:a', { mode: 'read' });
    expect(reader).not.toBeNull();
    await reader!.release();
  });

  it("a writer's first attempt names no intent key and sets none; its second sets the intent", async () => {
    const holder = await redlockOn(redisNodes);
    const waiter = await redlockOn(redisNodes, LONG_INTENT);
    const held = await holder.acquire('ti:f', { ttl: 30_000 });
    const commands = await NodeCommands.open(redisNodes.nodes);
    const controller = new AbortController();
    try {
      const pending = waiter.acquire('ti:f', { wait: 20_000, signal: controller.signal });
      const attempt = acquireOn('redlock:{ti:f}');
      const setsIntent = ([name, key]: readonly string[]) =>
        name === 'set' && key === 'redlock:{ti:f}:intent';
      await Promise.race([commands.ran(attempt, attempt, setsIntent), pending]);
      for (const node of [0, 1, 2]) {
        // The node's commands from the first attempt on: attempt, (no intent), attempt, intent set.
        const seen = commands.commands(node, (c) => attempt(c) || setsIntent(c));
        expect(
          seen.slice(0, 3).map((c) => (attempt(c) ? c.includes('redlock:{ti:f}:intent') : 'set')),
        ).toEqual([false, true, 'set']);
      }
      controller.abort();
      await expect(pending).rejects.toThrow();
    } finally {
      commands.close();
      await held.release();
    }
  });

  it('a waiter whose wait ran out, or whose signal aborted, takes its intent back', async () => {
    const holder = await redlockOn(redisNodes);
    const waiter = await redlockOn(redisNodes, LONG_INTENT);
    const calls = new NodeCalls(waiter.nodes);
    const all = [0, 1, 2];
    const held = await holder.acquire('ti:b', { ttl: 30_000 });
    await expect(waiter.acquire('ti:b', { wait: 300 })).rejects.toThrow();
    // Taken back by a call sent without waiting when the acquisition ended: read once every node answered it.
    await calls.until(() => calls.everyAnswered('clearIntent', 1, all));
    expect((await intentOf('ti:b')).every((v) => v === null)).toBe(true);

    const controller = new AbortController();
    const mark = calls.mark();
    const pending = waiter.acquire('ti:b', { wait: 20_000, signal: controller.signal });
    // The intent is set while it waits (writer preference): each attempt writes it; read once every node
    // answered the second one (it is then asleep). It is gone once it stopped.
    await calls.until(() => calls.everyAnswered('acquire', 2, all, undefined, mark), pending);
    expect((await intentOf('ti:b')).some((v) => v !== null)).toBe(true);
    controller.abort();
    await expect(pending).rejects.toThrow();
    await calls.until(() => calls.everyAnswered('clearIntent', 1, all, undefined, mark));
    expect((await intentOf('ti:b')).every((v) => v === null)).toBe(true);
    await held.release();
  });

  it('negative control: a node that cannot take an intent back keeps it for its whole ttl', async () => {
    const holder = await redlockOn(redisNodes);
    const waiter = await redlockOn(redisNodes, LONG_INTENT);
    for (const node of waiter.nodes)
      (node as { clearIntent?: LockNode['clearIntent'] }).clearIntent = undefined;
    const calls = new NodeCalls(waiter.nodes);
    const held = await holder.acquire('ti:c', { ttl: 30_000 });
    await expect(waiter.acquire('ti:c', { wait: 300 })).rejects.toThrow();
    // Still there once the acquisition ended and every call it sent was answered, where the test above reads
    // it gone: the check there is not vacuous (nor is the intent's 20 s ttl what removes it).
    await calls.idle();
    expect(calls.answered('clearIntent')).toBe(0);
    expect((await intentOf('ti:c')).every((v) => v === null)).toBe(false);
    await held.release();
  });

  it("the intent is owner-checked: another writer's intent stays, its own is deleted and announced", async () => {
    const redlock = await redlockOn(redisNodes);
    const node = redlock.nodes[0] as LockNode;
    const admin = redisNodes.nodes[0].redis();
    const listener = new Redis(redisNodes.urls[0]);
    try {
      const messages: string[] = [];
      await listener.subscribe('redlock:{ti:d}:released');
      listener.on('message', (channel: string) => messages.push(channel));
      const announced = once(listener, 'message');
      await admin.set('redlock:{ti:d}:intent', 'writer-a', 'PX', 20_000);
      expect(await node.clearIntent!(['redlock:{ti:d}:intent'], 'writer-b')).toBe(0);
      expect(await admin.get('redlock:{ti:d}:intent')).toBe('writer-a');
      expect(await node.clearIntent!(['redlock:{ti:d}:intent'], 'writer-a')).toBe(1);
      expect(await admin.get('redlock:{ti:d}:intent')).toBeNull();
      await announced;
      expect(messages).toEqual(['redlock:{ti:d}:released']);
    } finally {
      admin.disconnect();
      listener.disconnect();
    }
  });
});
