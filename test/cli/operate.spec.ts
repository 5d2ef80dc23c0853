import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { useRedisNodes } from '../support';
import { TreeBuild, transpileTree } from '../support/transpile-tree';
import { closeAll, redlockOn } from '../core/helpers';

const run = promisify(execFile);
const REPO = path.resolve(__dirname, '..', '..');

/** `npx nestjs-redlock inspect|holders` (the package's bin, transpiled) against 3 real nodes. */
describe('nestjs-redlock inspect and holders (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterEach: closeAll });
  let build: TreeBuild;
  beforeAll(() => {
    build = transpileTree(path.join(REPO, 'lib', 'cli', 'index.ts'), 'cli-operate');
  });
  afterAll(() => build?.dispose());

  async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(process.execPath, [build.entry, ...args], {
        env: { ...process.env, NODE_PATH: build.nodePath },
        timeout: 30_000,
      });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code?: number; stdout?: string; stderr?: string };
      return { code: failed.code ?? 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
    }
  }

  it('inspect prints the state, each holder on the quorum (owner, mode, ttl, held for) and each node', async () => {
    const redlock = await redlockOn(nodes, { owner: 'billing-7', fencing: true });
    const lock = await redlock.acquire('order:42', { ttl: 20_000 });
    const { code, stdout } = await cli('inspect', 'order:42', '--nodes', nodes.urls.join(','));
    expect(code).toBe(0);
    // The largest fence counter on any node: at least the lock's token.
    const token = Number(/^order:42: held, fencing token (\d+)/.exec(stdout)?.[1]);
    expect(token).toBeGreaterThanOrEqual(lock.fencingToken!);
    expect(stdout).toMatch(/billing-7\s+[0-9a-f]{8}\s+write\s+-\s+\d+ ms\s+\S+.*\s+3\n/);
    for (const url of nodes.urls) expect(stdout).toContain(url.replace('redis://', ''));
    expect(stdout).not.toContain(lock.value);
    await lock.release();
    expect((await cli('inspect', 'order:42', '--nodes', nodes.urls.join(','))).stdout).toMatch(
      /^order:42: free/,
    );
  });

  it('inspect shows fair waiters: how many, the longest wait, and each node in order', async () => {
    const holder = await redlockOn(nodes, { owner: 'holder' });
    const lock = await holder.acquire('order:7', { ttl: 20_000 });
    const waiter = await redlockOn(nodes, { owner: 'patient-1', fair: true });
    const waiting = waiter.acquire('order:7', { wait: 20_000 });
    // Its ticket is on every node once its first attempt was answered by all.
    for (;;) {
      const view = await holder.inspect('order:7');
      if (view.nodes.every((node) => node.waiters?.length === 1)) break;
    }
    const { stdout } = await cli('inspect', 'order:7', '--nodes', nodes.urls.join(','));
    expect(stdout).toMatch(/^order:7: held, 1 waiting \(the longest for \d+ ms\)/);
    expect(stdout.match(/\bpatient-1\b/g)).toHaveLength(3);
    await lock.release();
    await (await waiting).release();
  });

  it('holders lists the held locks under a prefix, and says so when there is none', async () => {
    const redlock = await redlockOn(nodes, { owner: 'lister' });
    const locks = [
      await redlock.acquire('order:1'),
      await redlock.acquire('order:2'),
      await redlock.acquire('user:1'),
    ];
    const orders = await cli('holders', '--prefix', 'order:', '--nodes', nodes.urls.join(','));
    expect(orders.code).toBe(0);
    expect(orders.stdout).toContain('2 lock(s) held, resources starting with "order:"');
    expect(orders.stdout).toMatch(/order:1\s+held\s+lister/);
    expect(orders.stdout).toMatch(/order:2\s+held\s+lister/);
    expect(orders.stdout).not.toContain('user:1');
    await Promise.all(locks.map((lock) => lock.release()));
    expect((await cli('holders', '--nodes', nodes.urls.join(','))).stdout).toBe(
      'no locks held (all resources)\n',
    );
  });

  it('refuses missing nodes, an unknown option and a bad limit with the usage (exit 1)', async () => {
    for (const args of [
      ['inspect', 'x'],
      ['holders', '--nodes', nodes.urls.join(','), '--limit', '0'],
      ['holders', '--nodes', nodes.urls.join(','), '--force', 'yes'],
      ['inspect', '--nodes', nodes.urls.join(',')],
    ]) {
      const result = await cli(...args);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^nestjs-redlock (inspect|holders): .+\n\nUsage: nestjs-redlock/);
    }
  });
});
