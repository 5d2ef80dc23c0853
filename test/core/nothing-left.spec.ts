import { once } from 'node:events';
import type { Lock } from '../../lib';
import { useRedisNodes } from '../support';
import type { RedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';
import { NodeCalls } from './node-calls';

/**
 * What an instance left on the nodes: every key holding one of its owner values — a lock key, a permit, a
 * writer intent (strings), or its entry in a readers set (sorted set). Fence counters and permit-limit
 * records hold numbers, owned by no one, and outlive locks by design.
 */
async function leftBy(nodes: RedisNodes, label: string): Promise<string[]> {
  const found: string[] = [];
  for (const node of nodes.nodes) {
    const admin = node.redis();
    try {
      for (const key of await admin.keys('*')) {
        const type = await admin.type(key);
        if (type === 'string' && ((await admin.get(key)) ?? '').endsWith(`:${label}`)) found.push(key);
        if (type === 'zset' && (await admin.zrange(key, 0, -1)).some((m) => m.endsWith(`:${label}`))) {
          found.push(`${key} (reader)`);
        }
      }
    } finally {
      admin.disconnect();
    }
  }
  return found;
}

/**
 * Issue "nothing left behind": a call that ends — with the lock, busy, out of time, aborted, its lock revoked —
 * leaves none of its keys on the nodes once it has ended (and its release or clean-up, sent without waiting,
 * has run). Locks here live 30 s and intents 20 s, so a key that is gone was removed, not expired.
 */
describe('every ending of every kind of call leaves nothing of the caller on the nodes (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterEach: closeAll });
  const LONG = { ttl: 30_000, maxRetryDelay: 5_000 };
  /**
   * True when nothing of `label` is left once every call its instance sent (`calls`: releases and clean-ups
   * sent without waiting too) was answered; otherwise what is left, for the failure message.
   */
  const nothingLeft = async (label: string, calls: NodeCalls) => {
    await calls.idle();
    const left = await leftBy(nodes, label);
    return left.length === 0 || left;
  };

  it('success, busy, timeout and abort: writers, readers, permits, using(), lead(), extend()', async () => {
    const holder = await redlockOn(nodes, { ...LONG, owner: 'holder' });
    const subject = await redlockOn(nodes, { ...LONG, owner: 'subject' });
    const holderCalls = new NodeCalls(holder.nodes);
    const subjectCalls = new NodeCalls(subject.nodes);
    // Success.
    await (await subject.acquire('nl:w')).release();
    await (await subject.acquire('nl:r', { mode: 'read' })).release();
    await (await subject.acquire('nl:p', { permits: 2 })).release();
    await subject.using('nl:u', async () => undefined);
    await subject.lead('nl:lead', async () => 'done');
    const extended = await subject.extend(await subject.acquire('nl:e'), 20_000);
    await extended.release();
    // Busy, out of time, aborted: against locks the holder keeps.
    const held: Lock[] = [
      await holder.acquire('nl:busy'),
      await holder.acquire('nl:pool', { permits: 1 }),
      await holder.acquire('nl:read', { mode: 'read' }),
    ];
    expect(await subject.tryAcquire('nl:busy')).toBeNull();
    expect(await subject.tryAcquire('nl:busy', { mode: 'read' })).toBeNull();
    expect(await subject.tryAcquire('nl:pool', { permits: 1 })).toBeNull();
    await expect(subject.acquire('nl:busy', { wait: 0 })).rejects.toThrow();
    await expect(subject.acquire('nl:busy', { wait: 300 })).rejects.toThrow();
    await expect(subject.acquire('nl:read', { wait: 300 })).rejects.toThrow(); // a writer kept out by a reader
    await expect(subject.acquire('nl:pool', { permits: 1, wait: 300 })).rejects.toThrow();
    const controller = new AbortController();
    const mark = subjectCalls.mark();
    const aborted = subject.acquire('nl:busy', { wait: 10_000, signal: controller.signal });
    // Aborted while it sleeps: once every node answered its second attempt (the one right after subscribing).
    await subjectCalls.until(
      () => subjectCalls.everyAnswered('acquire', 2, [0, 1, 2], undefined, mark),
      aborted,
    );
    controller.abort();
    await expect(aborted).rejects.toThrow();
    expect(await nothingLeft('subject', subjectCalls)).toBe(true);
    await Promise.all(held.map((lock) => lock.release()));
    expect(await nothingLeft('holder', holderCalls)).toBe(true);
  });

  it('revoked: the holder learns it and nothing of its lock stays', async () => {
    const subject = await redlockOn(nodes, { ...LONG, owner: 'subject' });
    const subjectCalls = new NodeCalls(subject.nodes);
    const operator = await redlockOn(nodes, { owner: 'operator' });
    let revokedOn = 0;
    const outcome = await subject
      .using('nl:revoked', async (lock) => {
        revokedOn = (await operator.revoke('nl:revoked', { reason: 'test' })).revokedOn;
        if (!lock.signal.aborted) await once(lock.signal, 'abort'); // the holder learns it
      })
      .catch((error: Error) => error.name);
    expect(revokedOn).toBe(3);
    expect(outcome).toBe('LockRevokedError');
    expect(await nothingLeft('subject', subjectCalls)).toBe(true);
  });

  it('negative control: a key the caller left behind is found', async () => {
    const subject = await redlockOn(nodes, { ...LONG, owner: 'subject' });
    const subjectCalls = new NodeCalls(subject.nodes);
    const lock = await subject.acquire('nl:kept');
    expect(await leftBy(nodes, 'subject')).toEqual([
      'redlock:{nl:kept}',
      'redlock:{nl:kept}',
      'redlock:{nl:kept}',
    ]);
    await lock.release();
    expect(await nothingLeft('subject', subjectCalls)).toBe(true);
  });
});
