import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vm from 'node:vm';
import * as ts from 'typescript';
import { Lock, Redlock } from '../../lib';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn, valuesOnNodes } from './helpers';

/** `await using lock = await redlock.acquire(...)` releases the lock when the block is left, however. */
describe('Lock is async-disposable (await using) on 3 real nodes', () => {
  const nodes = useRedisNodes(3, { afterAll: closeAll });
  let redlock: Redlock;

  beforeAll(async () => {
    redlock = await redlockOn(nodes);
  });

  const key = (resource: string) => `redlock:{${resource}}`;

  it('releases at the end of the block', async () => {
    let inside: (string | null | undefined)[] = [];
    let held: Lock | undefined;
    {
      await using lock = await redlock.acquire('dispose:1');
      held = lock;
      inside = await valuesOnNodes(nodes, key('dispose:1'));
    }
    expect(inside).toEqual(Array(3).fill(held.value));
    expect(held.isReleased).toBe(true);
    expect(await valuesOnNodes(nodes, key('dispose:1'))).toEqual([null, null, null]);
  });

  it('releases when the block throws, and the error passes through', async () => {
    let held: Lock | undefined;
    const work = async () => {
      await using lock = await redlock.acquire('dispose:2');
      held = lock;
      throw new Error('work failed');
    };
    await expect(work()).rejects.toThrow('work failed');
    expect(held!.isReleased).toBe(true);
    expect(await valuesOnNodes(nodes, key('dispose:2'))).toEqual([null, null, null]);
    // The next holder gets it at once.
    const next = await redlock.acquire('dispose:2', { wait: 0 });
    await next.release();
  });

  it('releasing twice is harmless: release() inside the block, then the disposal', async () => {
    const work = async () => {
      await using lock = await redlock.acquire('dispose:3');
      expect((await (await lock.release()).settled).releasedOn).toBe(3);
      return lock;
    };
    const lock = await work();
    expect(lock.isReleased).toBe(true);
    await expect(lock[Symbol.asyncDispose]()).resolves.toBeUndefined();
  });

  it('negative control: a plain const leaves the key until its ttl', async () => {
    let held: Lock | undefined;
    {
      const lock = await redlock.acquire('dispose:4', { ttl: 5_000 });
      held = lock;
    }
    expect(await valuesOnNodes(nodes, key('dispose:4'))).toEqual(Array(3).fill(held.value));
    await held.release();
  });

  it('defines Symbol.asyncDispose where it is missing (Node 20.0–20.3; here a vm context): await using works', async () => {
    const transpile = (source: string) =>
      ts.transpileModule(source, {
        compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
      }).outputText;
    const context = vm.createContext({ Buffer });
    expect(vm.runInContext('typeof Symbol.asyncDispose', context)).toBe('undefined');
    const load = (js: string, requireFn: (id: string) => unknown) => {
      const exports: Record<string, unknown> = {};
      vm.runInContext(`(function (exports, require) {${js}\n})`, context)(exports, requireFn);
      return exports;
    };
    const lockSource = fs.readFileSync(path.join(__dirname, '..', '..', 'lib', 'core', 'lock.ts'), 'utf8');
    const core = load(transpile(lockSource), (id) => {
      if (id === 'node:crypto') return require('node:crypto');
      throw new Error(`unexpected require('${id}')`);
    });
    expect(vm.runInContext("Symbol.asyncDispose === Symbol.for('Symbol.asyncDispose')", context)).toBe(true);

    const released: string[] = [];
    const issuer = {
      extend: () => Promise.reject(new Error('not used')),
      release: async (lock: { value: string }) => {
        released.push(lock.value);
        return { releasedOn: 1, votes: [] };
      },
    };
    const grant = {
      resources: ['r'],
      keys: ['k'],
      fenceKeys: [],
      value: 'owner-1',
      ttl: 1_000,
      deadline: 1_000,
      attempts: 1,
      fencingToken: undefined,
    };
    const userSource = `
      export async function run(Lock: any, grant: any, issuer: any) {
        await using lock = new Lock(grant, { abandoned: false }, issuer, { now: () => 0 });
        return lock.isReleased;
      }`;
    const user = load(transpile(userSource), () => undefined);
    const run = user.run as (...args: unknown[]) => Promise<boolean>;
    expect(await run(core.Lock, grant, issuer)).toBe(false);
    expect(released).toEqual(['owner-1']);

    // Control: without the definition at the top of lock.ts, the same code fails in such a context.
    const bare = vm.createContext({ Buffer });
    const withoutDefinition = lockSource.replace(/^if \(typeof \(Symbol[^]*?^}\n/m, '');
    expect(withoutDefinition).not.toContain('Object.defineProperty(Symbol');
    const loadIn = (js: string, requireFn: (id: string) => unknown) => {
      const exports: Record<string, unknown> = {};
      vm.runInContext(`(function (exports, require) {${js}\n})`, bare)(exports, requireFn);
      return exports;
    };
    const bareCore = loadIn(transpile(withoutDefinition), () => require('node:crypto'));
    const bareUser = loadIn(transpile(userSource), () => undefined);
    await expect(
      (bareUser.run as (...args: unknown[]) => Promise<boolean>)(bareCore.Lock, grant, issuer),
    ).rejects.toThrow(/Symbol\.asyncDispose is not defined/);
  });
});
