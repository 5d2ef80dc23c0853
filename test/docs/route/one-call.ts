import 'reflect-metadata';
import { Session } from 'node:inspector/promises';
import * as path from 'node:path';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AcquireReply, AcquireRequest, LockNode, Locked, RedlockError, RedlockModule } from '../../../lib';
import { ENTER_HOOK } from './enter-hook';

/**
 * Run by `test/docs/route.spec.ts` in a child process, over a copy of lib/ whose every function calls
 * `globalThis.__routeEnter(file)` on entry (`instrument.ts`). A Nest application with `RedlockModule.forRoot`
 * over three virtual in-memory nodes (its defaults: ttl 10 s, autoExtend on) and a provider with a
 * `@Locked('order:<0>')` method; one warm-up call, then one recorded call, from the call until it resolved
 * and every node answered its release; then the same for the negative control's method. Prints one JSON
 * line: {@link RouteRecording}.
 */

/** One recorded call. */
export interface CallRecording {
  /** The lib/ files whose functions ran, in order of first entry (`lib/...`). */
  readonly route: string[];
  /** How many function entries each of them had, in the same order. */
  readonly entries: number[];
  /** The lib/ files V8's precise coverage saw a function of run in the same window (sorted). */
  readonly covered: string[];
  /** What the method returned. */
  readonly value: unknown;
  /** Milliseconds the recorded call took, until its release was answered by every node. */
  readonly elapsed: number;
}

/** What the child prints: the call, and the negative control's call (its body enters one more lib/ file). */
export interface RouteRecording {
  readonly call: CallRecording;
  readonly planted: CallRecording;
}

/** A Redis node in memory: the port's acquire, fence, extend and release on plain keys, answering at once. */
class VirtualNode implements LockNode {
  private readonly keys = new Map<string, { owner: string; until: number }>();
  private counter = 0;
  releases = 0;
  constructor(readonly name: string) {}

  async acquire(request: AcquireRequest): Promise<AcquireReply> {
    const now = Date.now();
    for (const key of request.keys) {
      const held = this.keys.get(key);
      if (held && held.until > now && held.owner !== request.owner) {
        return { outcome: 'busy', holderTtl: held.until - now };
      }
    }
    for (const key of request.keys) this.keys.set(key, { owner: request.owner, until: now + request.ttl });
    return { outcome: 'acquired', token: request.fenceKeys.length > 0 ? ++this.counter : 0 };
  }

  async fence(keys: readonly string[], _fenceKeys: readonly string[], owner: string): Promise<boolean> {
    return this.holds(keys, owner);
  }

  async extend(keys: readonly string[], owner: string, ttl: number): Promise<boolean> {
    if (!this.holds(keys, owner)) return false;
    for (const key of keys) this.keys.set(key, { owner, until: Date.now() + ttl });
    return true;
  }

  async release(keys: readonly string[], owner: string): Promise<number> {
    this.releases++;
    let deleted = 0;
    for (const key of keys) {
      if (this.keys.get(key)?.owner === owner && this.keys.delete(key)) deleted++;
    }
    return deleted;
  }

  private holds(keys: readonly string[], owner: string): boolean {
    const now = Date.now();
    return keys.every((key) => {
      const held = this.keys.get(key);
      return held !== undefined && held.owner === owner && held.until > now;
    });
  }
}

@Injectable()
class Orders {
  @Locked('order:<0>')
  async pay(orderId: string): Promise<string> {
    return `paid ${orderId}`;
  }

  /** The negative control: the same, but its body runs code of a lib/ file off the route (core/errors.ts). */
  @Locked('order:<0>')
  async payPlanted(orderId: string): Promise<string> {
    return new RedlockError(`paid ${orderId}`).message;
  }
}

/** The lib/ file a script URL of the instrumented copy stands for (`lib/...`), or undefined. */
function libFileOf(url: string, root: string): string | undefined {
  const prefix = `file://${root}/lib/`;
  return url.startsWith(prefix) ? `lib/${url.slice(prefix.length).replace(/\.js$/, '.ts')}` : undefined;
}

/**
 * Records `call` from its start until it resolved and every node answered its release: which lib/ files'
 * functions it entered (the hook) and which V8 saw run (precise coverage, reset just before).
 */
async function record(
  session: Session,
  nodes: readonly VirtualNode[],
  root: string,
  call: () => Promise<unknown>,
): Promise<CallRecording> {
  const order: string[] = [];
  const counts = new Map<string, number>();
  const releasesBefore = nodes.map((node) => node.releases);
  await session.post('Profiler.takePreciseCoverage'); // resets the counters
  const hook = (file: string) => {
    const lib = `lib/${file}`;
    if (!counts.has(lib)) order.push(lib);
    counts.set(lib, (counts.get(lib) ?? 0) + 1);
  };
  const started = performance.now();
  (globalThis as Record<string, unknown>)[ENTER_HOOK] = hook;
  const value = await call();
  // The nodes answer at once: the release has been asked of every node, and their answers are taken in by
  // the next turn of the event loop.
  const asked = nodes.every((node, i) => node.releases === releasesBefore[i] + 1);
  await new Promise((resolve) => setImmediate(resolve));
  delete (globalThis as Record<string, unknown>)[ENTER_HOOK];
  const elapsed = performance.now() - started;
  const { result } = await session.post('Profiler.takePreciseCoverage');
  if (!asked) throw new Error('the recorded call did not release on every node');
  const covered = new Set<string>();
  for (const script of result) {
    const file = libFileOf(script.url, root);
    // Counts since the reset: the module's own code (run once, when it was loaded) counts 0 here.
    if (file !== undefined && script.functions.some((fn) => fn.ranges[0].count > 0)) covered.add(file);
  }
  return {
    route: order,
    entries: order.map((file) => counts.get(file)!),
    covered: [...covered].sort(),
    value,
    elapsed,
  };
}

async function main(): Promise<void> {
  // The copy's root: this file is <root>/test/docs/route/one-call.js.
  const root = path.resolve(__dirname, '..', '..', '..');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

  const nodes = [new VirtualNode('a:1'), new VirtualNode('b:1'), new VirtualNode('c:1')];
  const moduleRef = await Test.createTestingModule({
    imports: [RedlockModule.forRoot(nodes)],
    providers: [Orders],
  }).compile();
  await moduleRef.init();
  const orders = moduleRef.get(Orders);
  // Warm-up: what only a method's first call does (reading its schedule, once) is not recorded.
  await orders.pay('41');
  await orders.payPlanted('41');
  await new Promise((resolve) => setImmediate(resolve));

  const recording: RouteRecording = {
    call: await record(session, nodes, root, () => orders.pay('42')),
    planted: await record(session, nodes, root, () => orders.payPlanted('42')),
  };
  await moduleRef.close();
  session.disconnect();
  process.stdout.write(`${JSON.stringify(recording)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
