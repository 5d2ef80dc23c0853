import { RedlockCore } from '../../lib/core';
import type {
  AcquireReply,
  AcquireRequest,
  ExtendItem,
  LockNode,
  RedlockInternals,
  RedlockOptions,
  ReleaseListener,
} from '../../lib/core';
import { Prng } from '../safety/sim/prng';
import { VirtualServer } from '../safety/sim/server';
import { VirtualClock } from './virtual-clock';

/**
 * A lock node on a {@link VirtualClock} that runs the model of the Lua scripts the simulation uses
 * (`test/safety/sim/server.ts`, checked against the real scripts on a redis-server by `model-vs-redis.spec.ts`):
 * read-write locks (readers sets, writer intents), fencing counters, a semaphore's recorded limit, and release
 * announcements (`watch`, delivered a microtask later, as a pub/sub message after the script). Answers come a
 * microtask after the call, in call order (one connection). No restart guard (the cores run with it off), no
 * `clearIntent` (optional: a writer that gives up leaves its intent to lapse), no faults. For the timing policy
 * of leadership, read-write locks and permits, where MemoryNode (exclusive keys only) is not enough.
 */
export class ModelNode implements LockNode {
  readonly ordered = true;
  readonly server: VirtualServer;
  /** Acquire requests received so far, by owner label (`RedlockOptions.owner`, the third part of the value). */
  readonly acquires = new Map<string, number>();

  constructor(
    readonly name: string,
    clock: VirtualClock,
    rng: Prng,
  ) {
    this.server = new VirtualServer(
      {
        scheduler: {
          get now() {
            return clock.now();
          },
        },
        rng,
      },
      {
        name,
        clockOffsetUs: 0,
        clockRate: 1,
        bootTime: -3_600_000,
        uptimeGranularity: 1,
        infoReadable: true,
        clockStepBackUs: 0,
        persistenceLag: undefined,
      },
    );
  }

  private answer<T>(run: () => T): Promise<T> {
    return Promise.resolve().then(run);
  }

  acquire(request: AcquireRequest): Promise<AcquireReply> {
    const label = request.owner.split(':')[2] ?? '';
    this.acquires.set(label, (this.acquires.get(label) ?? 0) + 1);
    return this.answer(() => this.server.acquire(request));
  }
  fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    owner: string,
    token: number,
    readers?: readonly string[],
  ): Promise<boolean> {
    return this.answer(() => this.server.fence(keys, fenceKeys, owner, token, readers));
  }
  extend(keys: readonly string[], owner: string, ttl: number, readers?: readonly string[]): Promise<boolean> {
    return this.answer(() => this.server.extend(keys, owner, ttl, readers));
  }
  extendMany(items: readonly ExtendItem[]): Promise<boolean[]> {
    return this.answer(() =>
      items.map((item) => this.server.extend(item.keys, item.owner, item.ttl, item.readers)),
    );
  }
  release(keys: readonly string[], owner: string, readers?: readonly string[]): Promise<number> {
    return this.answer(() => this.server.release(keys, owner, readers));
  }
  limit(key: string, permits: number, ttl: number): Promise<number> {
    return this.answer(() => this.server.limit(key, permits, ttl));
  }
  watch(keys: readonly string[], listener: ReleaseListener): Promise<() => void> {
    let listening = true;
    const unsubscribe = this.server.subscribe(keys, {
      active: true,
      push: (event) => queueMicrotask(() => listening && listener(event)),
    });
    return this.answer(() => () => {
      listening = false;
      unsubscribe();
    });
  }
  async connect(): Promise<void> {}
  async close(): Promise<void> {}
}

/**
 * Three {@link ModelNode}s on one virtual clock, and `instance(options)` to make Redlock instances over them (each
 * instance its own process: its own local queue), restart guard and logging off, random drawn from one seeded
 * PRNG so that a run replays exactly.
 */
export function modelCluster(seed = 1): {
  clock: VirtualClock;
  nodes: ModelNode[];
  rng: Prng;
  instance(options?: RedlockOptions, internals?: RedlockInternals): RedlockCore;
} {
  const clock = new VirtualClock();
  const rng = new Prng(seed);
  const nodes = ['a', 'b', 'c'].map((name) => new ModelNode(`${name}:1`, clock, rng));
  let count = 0;
  const instance = (options: RedlockOptions = {}, internals: RedlockInternals = {}) =>
    new RedlockCore(
      nodes,
      { logger: false, restartGuard: false, owner: `i${count++}`, ...options },
      { clock, random: () => rng.next(), ...internals },
    );
  return { clock, nodes, rng, instance };
}

/** A promise and the function that resolves it. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
