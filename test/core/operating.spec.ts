import { ChildProcess, fork } from 'node:child_process';
import { hostname } from 'node:os';
import * as path from 'node:path';
import {
  InvalidArgumentError,
  Lock,
  LockRevokedError,
  Redlock,
  UnknownOptionError,
  type LockInspection,
} from '../../lib';
import { FencedRegister } from '../safety/checkers/fenced-register';
import { useRedisNodes } from '../support';
import { TreeBuild, transpileTree } from '../support/transpile-tree';
import { closeAll, redlockOn, valuesOnNodes } from './helpers';
import { NodeCalls } from './node-calls';

/**
 * Operating locks (docs/DESIGN.md §16) on 3 real nodes: owner labels, inspect(), holders(), revoke() — in this
 * process and across processes, with fencing still rejecting the revoked holder's late write.
 */
describe('operating locks: owner labels, inspect, holders, revoke (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterEach: closeAll });
  const children = new Set<ChildProcess>();
  let build: TreeBuild | undefined;
  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
    build?.dispose();
  });

  function holderOwners(inspection: LockInspection): (string | undefined)[] {
    return inspection.holders.map((holder) => holder.owner);
  }

  describe('owner labels', () => {
    it('are <hostname>:<pid> by default and the `owner` option otherwise, stored after the random part', async () => {
      const plain = await redlockOn(nodes);
      expect(plain.options.owner).toBe(`${hostname()}:${process.pid}`);
      const labelled = await redlockOn(nodes, { owner: 'billing-worker-1' });
      const lock = await labelled.acquire('labelled');
      const values = await valuesOnNodes(nodes, 'redlock:{labelled}');
      expect(values).toEqual(
        [lock.value, lock.value, lock.value].map(() => expect.stringMatching(/:billing-worker-1$/)),
      );
      // The label does not decide anything: another instance with the same label cannot release it.
      const twin = await redlockOn(nodes, { owner: 'billing-worker-1' });
      const other = await twin.tryAcquire('labelled');
      expect(other).toBeNull();
      await lock.release();
      expect(await valuesOnNodes(nodes, 'redlock:{labelled}')).toEqual([null, null, null]);
    });

    it('are validated: empty, too long, with a line break or not a string is refused before any traffic', () => {
      for (const owner of ['', 'x'.repeat(101), 'a\nb', 42]) {
        expect(() => new Redlock(nodes.urls, { owner: owner as string, logger: false })).toThrow(
          InvalidArgumentError,
        );
      }
      expect(() => new Redlock(nodes.urls, { owner: 'x'.repeat(101), logger: false })).toThrow(
        /owner must be a label of 1 to 100 printable characters/,
      );
    });
  });

  describe('inspect()', () => {
    it('a free resource: free, no holder, every node read', async () => {
      const redlock = await redlockOn(nodes);
      const inspection = await redlock.inspect('nothing-here');
      expect(inspection).toMatchObject({ resource: 'nothing-here', state: 'free', holders: [] });
      expect(inspection.nodes.map((node) => node.error)).toEqual([undefined, undefined, undefined]);
    });

    it('a held lock: its owner, since when, ttl left, token; never the owner value itself', async () => {
      const redlock = await redlockOn(nodes, { owner: 'api-7', fencing: true });
      const before = Date.now();
      const lock = await redlock.acquire('order:42', { ttl: 8_000 });
      const inspection = await redlock.inspect('order:42');
      expect(inspection.state).toBe('held');
      expect(inspection.holders).toHaveLength(1);
      const [holder] = inspection.holders;
      expect(holder).toMatchObject({ owner: 'api-7', nodes: 3, mode: 'write' });
      expect(holder.since).toBeGreaterThanOrEqual(before - 5);
      expect(holder.since).toBeLessThanOrEqual(Date.now());
      expect(holder.ttl).toBeGreaterThan(0);
      expect(holder.ttl).toBeLessThanOrEqual(8_000);
      // The largest counter on any node: at least the lock's token (a node past the quorum may count higher).
      expect(inspection.fencingToken).toBeGreaterThanOrEqual(lock.fencingToken!);
      expect(JSON.stringify(inspection)).not.toContain(lock.value);
      // Two holders with one label are told apart by the fingerprint.
      await lock.release();
      const again = await redlock.acquire('order:42');
      const second = await redlock.inspect('order:42');
      expect(second.holders[0].id).not.toBe(holder.id);
      expect(second.fencingToken).toBeGreaterThan(inspection.fencingToken!);
      await again.release();
      expect((await redlock.inspect('order:42')).state).toBe('free');
    });

    it('readers, a waiting writer, and a semaphore’s permits', async () => {
      const readers = await redlockOn(nodes, { owner: 'reader' });
      const [r1, r2] = [
        await readers.acquire('catalog', { mode: 'read' }),
        await readers.acquire('catalog', { mode: 'read' }),
      ];
      const read = await readers.inspect('catalog');
      expect(read.state).toBe('held');
      expect(read.holders.map((holder) => [holder.owner, holder.mode])).toEqual([
        ['reader', 'read'],
        ['reader', 'read'],
      ]);
      // A writer that waits leaves its intent: new readers are kept out, and inspection says so.
      const writer = await redlockOn(nodes, { owner: 'writer' });
      const calls = new NodeCalls(writer.nodes);
      const waiting = writer.acquire('catalog', { wait: 5_000 });
      // Each attempt writes the intent: read once every node answered the second (the writer is then asleep).
      await calls.until(
        () =>
          calls.everyAnswered(
            'acquire',
            2,
            nodes.nodes.map((_, i) => i),
          ),
        waiting,
      );
      expect((await readers.inspect('catalog')).nodes.every((node) => node.writerWaiting)).toBe(true);
      await r1.release();
      await r2.release();
      await (await waiting).release();

      const pool = await redlockOn(nodes, { owner: 'exporter' });
      const p1 = await pool.acquire('exports', { permits: 3 });
      const p2 = await pool.acquire('exports', { permits: 3 });
      const permits = await pool.inspect('exports');
      expect(permits.permits).toBe(3);
      expect(permits.holders.map((holder) => holder.permit).sort()).toEqual([p1.permit, p2.permit].sort());
      expect(holderOwners(permits)).toEqual(['exporter', 'exporter']);
      await Promise.all([p1.release(), p2.release()]);
    });

    it('held on one node only: split; a node that cannot be read: its error, the quorum view from the rest', async () => {
      const redlock = await redlockOn(nodes);
      const admin = nodes.nodes[0].redis();
      await admin.set('redlock:{half}', 'someone:1:x', 'PX', 10_000);
      admin.disconnect();
      const split = await redlock.inspect('half');
      expect(split.state).toBe('split');
      expect(split.holders).toEqual([]);
      expect(split.nodes[0].holders).toHaveLength(1);

      const lock = await redlock.acquire('paused');
      await nodes.nodes[2].pause();
      try {
        const inspection = await redlock.inspect('paused');
        expect(inspection.state).toBe('held');
        expect(inspection.holders[0].nodes).toBe(2);
        expect(inspection.nodes[2].error).toMatch(/did not answer the inspection in time/);
      } finally {
        await nodes.nodes[2].resume();
      }
      await lock.release();
    });
  });

  describe('holders()', () => {
    it('lists the held locks under a prefix, merged across nodes; free and fence-only resources left out', async () => {
      const redlock = await redlockOn(nodes, { owner: 'lister', fencing: true });
      const held = [
        await redlock.acquire('order:1'),
        await redlock.acquire('order:2'),
        await redlock.acquire('user:1'),
      ];
      const released = await redlock.acquire('order:3');
      await released.release(); // leaves its fence counter behind
      const orders = await redlock.holders({ prefix: 'order:' });
      expect(orders.map((inspection) => inspection.resource)).toEqual(['order:1', 'order:2']);
      expect(orders.every((inspection) => inspection.holders[0].owner === 'lister')).toBe(true);
      expect((await redlock.holders()).map((inspection) => inspection.resource)).toEqual([
        'order:1',
        'order:2',
        'user:1',
      ]);
      expect(await redlock.holders({ prefix: 'order:', limit: 1 })).toHaveLength(1);
      await Promise.all(held.map((lock) => lock.release()));
      expect(await redlock.holders()).toEqual([]);
    });

    it('refuses bad options with what to pass', async () => {
      const redlock = await redlockOn(nodes);
      await expect(redlock.holders({ limit: 0 })).rejects.toThrow(
        /limit must be a whole number from 1 to 10000/,
      );
      await expect(redlock.holders({ prefix: 7 as unknown as string })).rejects.toThrow(InvalidArgumentError);
      await expect(redlock.holders({ limt: 5 } as never)).rejects.toThrow(UnknownOptionError);
      await expect(redlock.inspect(['a', 'b'] as unknown as string)).rejects.toThrow(/one resource name/);
    });
  });

  describe('revoke()', () => {
    it("deletes it on every node whoever holds it; the holder's signal aborts with the reason; logged and emitted", async () => {
      const lines: string[] = [];
      const operator = await redlockOn(nodes, { logger: { warn: (line) => lines.push(line) } });
      const holder = await redlockOn(nodes, { owner: 'stuck-worker' });
      const lock = await holder.acquire('job:9', { ttl: 30_000 });
      const events: unknown[] = [];
      operator.on('revoked', (event) => events.push(event));
      const aborted = new Promise<unknown>((resolve) =>
        lock.signal.addEventListener('abort', () => resolve(lock.signal.reason), { once: true }),
      );
      const outcome = await operator.revoke('job:9', { reason: 'stuck since Monday' });
      expect(outcome).toEqual({ resource: 'job:9', revokedOn: 3, errors: [] });
      expect(await valuesOnNodes(nodes, 'redlock:{job:9}')).toEqual([null, null, null]);
      const reason = (await aborted) as LockRevokedError;
      expect(reason).toBeInstanceOf(LockRevokedError);
      expect(reason.reason).toBe('stuck since Monday');
      expect(lock.lostError).toBe(reason);
      expect(holder.stats.locksLost).toBe(1);
      expect(events).toEqual([{ resource: 'job:9', reason: 'stuck since Monday', revokedOn: 3 }]);
      expect(lines).toEqual([
        expect.stringContaining(
          'Revoked the lock on "job:9" ("stuck since Monday"): deleted on 3 of 3 nodes',
        ),
      ]);
      // The resource is free for the next holder at once.
      await (await operator.acquire('job:9', { wait: 0 })).release();
    });

    it("fencing still protects the resource from the revoked holder's late write", async () => {
      const holder = await redlockOn(nodes, { fencing: true });
      const next = await redlockOn(nodes, { fencing: true });
      const register = new FencedRegister<string>();
      const revoked = await holder.acquire('ledger');
      await next.revoke('ledger', { reason: 'operator' });
      const successor = await next.acquire('ledger', { wait: 0 });
      expect(register.write(successor.fencingToken!, 'successor')).toBe(true);
      // The revoked holder, not yet aware, writes late: the register rejects its smaller token.
      expect(register.write(revoked.fencingToken!, 'revoked holder')).toBe(false);
      expect(register.value).toBe('successor');
      await successor.release();
    });

    it('a semaphore: every permit and its readers go; waiters wake; nothing of another resource is touched', async () => {
      const pool = await redlockOn(nodes);
      const permits = [
        await pool.acquire('exports', { permits: 2 }),
        await pool.acquire('exports', { permits: 2 }),
      ];
      const neighbour = await pool.acquire('exports-other');
      const waiter = pool.acquire('exports', { permits: 2, wait: 10_000 });
      expect((await pool.revoke('exports', { reason: 'drain' })).revokedOn).toBe(3);
      expect(permits.every((lock) => lock.lostError instanceof LockRevokedError)).toBe(true);
      const woken = await waiter;
      expect((await pool.inspect('exports')).holders).toHaveLength(1);
      expect((await pool.inspect('exports-other')).state).toBe('held');
      expect(neighbour.lostError).toBeUndefined();
      await Promise.all([woken.release(), neighbour.release()]);
    });

    it('a holder in another process learns it at once, through the revocation channel', async () => {
      build ??= transpileTree(path.join(__dirname, 'revocation', 'holder.ts'), 'revocation-holder');
      const child = fork(build.entry, [], {
        env: {
          ...process.env,
          NODE_PATH: build.nodePath,
          NODES: JSON.stringify(nodes.urls),
          RESOURCE: 'far',
        },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.add(child);
      const messages: Record<string, unknown>[] = [];
      const next = (kind: string) =>
        new Promise<Record<string, unknown>>((resolve, reject) => {
          const found = messages.find((message) => message.kind === kind);
          if (found) return resolve(found);
          // The listener below records every message; this one only waits for `kind`.
          const onMessage = (message: Record<string, unknown>) => {
            if (message.kind === kind) resolve(message);
            if (message.kind === 'failed') reject(new Error(String(message.message)));
          };
          child.on('message', onMessage);
        });
      child.on('message', (message: Record<string, unknown>) => messages.push(message));
      await next('holding');
      const operator = await redlockOn(nodes);
      expect((await operator.inspect('far')).holders[0].owner).toBe('holder-process');
      await operator.revoke('far', { reason: 'moved to another shard' });
      // The lock's ttl is 60 s and its first renewal 40 s away: only the channel can tell it this soon.
      const aborted = await next('aborted');
      expect(aborted).toMatchObject({
        name: 'LockRevokedError',
        revoked: true,
        reason: 'moved to another shard',
        lost: 1,
      });
      expect(aborted.message).toMatch(/was lost: it was revoked \("moved to another shard"\)/);
      expect(await next('using-rejected')).toMatchObject({ name: 'LockRevokedError' });
      await new Promise<void>((resolve) =>
        child.exitCode !== null ? resolve() : child.once('exit', () => resolve()),
      );
      children.delete(child);
    }, 30_000);

    it('refuses a call without a reason, with an unknown option, or for something that is not one resource', async () => {
      const redlock = await redlockOn(nodes);
      await expect(redlock.revoke('x', undefined as never)).rejects.toThrow(/say why the lock is revoked/);
      await expect(redlock.revoke('x', { reason: '  ' })).rejects.toThrow(/revoke\(\) needs a reason/);
      await expect(redlock.revoke('x', { reason: 'ok', force: true } as never)).rejects.toThrow(
        UnknownOptionError,
      );
      await expect(redlock.revoke(['x'] as unknown as string, { reason: 'ok' })).rejects.toThrow(
        /one resource name/,
      );
    });
  });

  it('a lock released normally is not reported lost, and the instance keeps no trace of it (no revocation held)', async () => {
    const redlock = await redlockOn(nodes);
    const lock: Lock = await redlock.acquire('plain');
    await lock.release();
    await redlock.revoke('plain', { reason: 'late' });
    expect(lock.lostError).toBeUndefined();
    expect(redlock.stats.locksLost).toBe(0);
  });
});
