import { type ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { useRedisNodes } from '../support';
import { type TreeBuild, transpileTree } from '../support/transpile-tree';
import { closeAll, redlockOn } from './helpers';

/**
 * Fair waiting (docs/DESIGN.md §18) with each waiter in a Node process of its own, on 3 real nodes: the order
 * holds across processes, and a waiter whose process dies does not hold up the ones behind it. Each child is
 * `fair-processes/waiter.ts`, transpiled once.
 */
describe('fair waiting across processes (3 real nodes)', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeAll });
  let build: TreeBuild;
  const children: ChildProcess[] = [];

  beforeAll(() => {
    build = transpileTree(path.join(__dirname, 'fair-processes', 'waiter.ts'), 'fair-waiter');
  });
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });
  afterAll(() => build?.dispose());

  /** A waiter process; `lines` resolves each line it prints, in order, through `next(matching)`. */
  function waiter(name: string, options: { fair: boolean; deaf: boolean }) {
    const job = { urls: redisNodes.urls, resource: 'fp', ...options };
    const child = spawn(process.execPath, [build.entry, JSON.stringify(job)], {
      env: { ...process.env, NODE_PATH: build.nodePath },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    const seen: string[] = [];
    const waiting: { match: (line: string) => boolean; resolve: () => void }[] = [];
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      seen.push(line);
      for (let i = waiting.length - 1; i >= 0; i--)
        if (waiting[i].match(line)) waiting.splice(i, 1)[0].resolve();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return {
      name,
      child,
      seen,
      exited,
      /** Resolves at the next line `match` accepts (or at once if one came already and `past`). */
      next(match: (line: string) => boolean, past = false): Promise<void> {
        if (past && seen.some(match)) return Promise.resolve();
        return new Promise<void>((resolve) => waiting.push({ match, resolve }));
      },
    };
  }

  /**
   * A waiter that polls slowly (no announcements) asks first; a newcomer that hears announcements comes next.
   * The lock is released right after one of the first waiter's attempts was answered: only the newcomer is
   * woken at once. Returns who was granted first.
   */
  async function slowFirstThenNewcomer(fair: boolean): Promise<string[]> {
    const holder = await redlockOn(redisNodes);
    const lock = await holder.acquire('fp', { ttl: 20_000 });
    const order: string[] = [];
    const first = waiter('first', { fair, deaf: true });
    await first.next((line) => line === 'asked');
    const newcomer = waiter('newcomer', { fair, deaf: false });
    await newcomer.next((line) => line === 'asked');
    for (const w of [first, newcomer])
      void w.next((line) => line === 'granted').then(() => order.push(w.name));
    await first.next((line) => line === 'asked'); // it sleeps ~400 ms from now
    await lock.release();
    expect(await first.exited).toBe(0);
    expect(await newcomer.exited).toBe(0);
    return order;
  }

  it('the waiter that came first is granted first, in another process than the newcomer', async () => {
    expect(await slowFirstThenNewcomer(true)).toEqual(['first', 'newcomer']);
  }, 30_000);

  it('negative control: without fair waiting the newcomer, woken by the release, goes first', async () => {
    expect(await slowFirstThenNewcomer(false)).toEqual(['newcomer', 'first']);
  }, 30_000);

  it('a waiter whose process is killed while first in line: its ticket expires, the next one is granted', async () => {
    const holder = await redlockOn(redisNodes);
    const lock = await holder.acquire('fp', { ttl: 20_000 });
    const doomed = waiter('doomed', { fair: true, deaf: false });
    await doomed.next((line) => line === 'place 1', true);
    const next = waiter('next', { fair: true, deaf: false });
    await next.next((line) => line === 'place 2', true);
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    await lock.release();
    // The dead waiter's turn ends when its ticket would have been renewed; the next waiter is granted then.
    const code = await next.exited;
    // Its lines say how it went (an `error ...` line when its wait ran out).
    expect(next.seen).toContain('granted');
    expect(code).toBe(0);
    expect(doomed.seen).not.toContain('granted');
    // Two process start-ups and the waiter's 20 s wait: on a loaded machine more than 30 s can pass before a
    // waiter that never got the lock says why, and that line is what this test must show.
  }, 60_000);
});
