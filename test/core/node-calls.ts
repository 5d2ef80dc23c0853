import type { LockNode } from '../../lib';

/** The node methods {@link NodeCalls} watches. */
export type NodeMethod =
  'acquire' | 'fence' | 'extend' | 'extendMany' | 'release' | 'clearIntent' | 'limit' | 'watch';
const METHODS: readonly NodeMethod[] = [
  'acquire',
  'fence',
  'extend',
  'extendMany',
  'release',
  'clearIntent',
  'limit',
  'watch',
];

/** One call an instance made to one of its nodes. */
export interface NodeCall {
  readonly method: NodeMethod;
  /** The node's index in the instance's `nodes`. */
  readonly node: number;
  /** The lock keys it was about (an acquire request's `keys`, the keys of the other methods). */
  readonly keys: readonly string[];
  /** True once the node answered (or the call failed). */
  settled: boolean;
  /** True when the call failed (rejected) instead of being answered. */
  failed: boolean;
}

/**
 * Watches the calls an instance makes to its nodes, wrapping each node's methods in place (the nodes of a
 * `Redlock` are its own objects), so that a test waits for the call itself instead of sleeping on the real
 * clock: a waiter's second attempt answered (it is then subscribed and asleep), a clean-up sent without
 * waiting answered, a straggling answer arrived. Nothing here waits on a clock.
 */
export class NodeCalls {
  readonly calls: NodeCall[] = [];
  /** Release-watch events the nodes gave the instance's waiters: which node, and how many calls came before. */
  readonly watchEvents: {
    readonly event: 'released' | 'lost';
    readonly node: number;
    readonly after: number;
  }[] = [];
  private readonly waiting: { ready: () => boolean; resolve: () => void }[] = [];

  constructor(nodes: readonly LockNode[]) {
    nodes.forEach((node, index) => {
      // A watch is a call too (answered once subscribed); the events it delivers are recorded.
      const watch = node.watch?.bind(node);
      if (watch) {
        node.watch = (keys, listener) =>
          watch(keys, (event) => {
            this.watchEvents.push({ event, node: index, after: this.calls.length });
            this.check();
            listener(event);
          });
      }
      const methods = node as unknown as Record<
        string,
        ((...args: unknown[]) => Promise<unknown>) | undefined
      >;
      for (const method of METHODS) {
        const original = methods[method];
        if (typeof original !== 'function') continue;
        methods[method] = (...args: unknown[]) => {
          const call: NodeCall = {
            method,
            node: index,
            keys: keysOf(method, args),
            settled: false,
            failed: false,
          };
          this.calls.push(call);
          this.check();
          return original
            .apply(node, args)
            .catch((error: unknown) => {
              call.failed = true;
              throw error;
            })
            .finally(() => {
              call.settled = true;
              this.check();
            });
        };
      }
    });
  }

  /**
   * The calls of `method` answered so far, on node `node` (any node if undefined), about `key` (any if
   * undefined), among the calls sent after the first `after` ones (see {@link mark}).
   */
  answered(method: NodeMethod, node?: number, key?: string, after = 0): number {
    return this.calls
      .slice(after)
      .filter(
        (call) =>
          call.settled &&
          call.method === method &&
          (node === undefined || call.node === node) &&
          (key === undefined || call.keys.includes(key)),
      ).length;
  }

  /** True when every node of `nodes` (indexes) answered at least `count` calls of `method` (about `key`). */
  everyAnswered(
    method: NodeMethod,
    count: number,
    nodes: readonly number[],
    key?: string,
    after = 0,
  ): boolean {
    return nodes.every((node) => this.answered(method, node, key, after) >= count);
  }

  /** How many calls were sent so far: pass it as `after` to count only the calls sent from now on. */
  mark(): number {
    return this.calls.length;
  }

  /** Calls of `method` sent to node `node` after the first `after` calls (of any kind, to any node). */
  sentAfter(method: NodeMethod, node: number, after: number): number {
    return this.calls.slice(after).filter((call) => call.method === method && call.node === node).length;
  }

  /** Calls of `method` that failed (rejected) so far. */
  failures(method: NodeMethod): number {
    return this.calls.filter((call) => call.method === method && call.failed).length;
  }

  /** Calls sent and not answered yet. */
  get inFlight(): number {
    return this.calls.filter((call) => !call.settled).length;
  }

  /**
   * Resolves once `ready()` holds, checked now and at every call sent or answered, and then one turn of the
   * event loop later (the core's own continuation of that answer — going to sleep, say — has run by then).
   * Rejects with `orElse`'s outcome if `orElse` settles first (the scenario ended without it: a failure, not
   * a hang).
   */
  until(ready: () => boolean, orElse?: Promise<unknown>): Promise<void> {
    const reached = new Promise<void>((resolve) => {
      this.waiting.push({ ready, resolve });
      this.check();
    }).then(() => new Promise<void>((resolve) => setImmediate(resolve)));
    if (!orElse) return reached;
    const ended = orElse.then(
      (value) => Promise.reject(new Error(`ended before the awaited node calls: ${String(value)}`)),
      (error: unknown) => Promise.reject(error),
    );
    return Promise.race([reached, ended]);
  }

  /** Resolves once every call sent so far (and any sent meanwhile) has been answered. */
  idle(): Promise<void> {
    return this.until(() => this.inFlight === 0).then(() => (this.inFlight === 0 ? undefined : this.idle()));
  }

  private check(): void {
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      if (this.waiting[i].ready()) this.waiting.splice(i, 1)[0].resolve();
    }
  }
}

function keysOf(method: NodeMethod, args: unknown[]): readonly string[] {
  if (method === 'acquire') return (args[0] as { keys: readonly string[] }).keys;
  if (method === 'extendMany') return (args[0] as { keys: readonly string[] }[]).flatMap((item) => item.keys);
  if (method === 'limit') return [args[0] as string];
  return (args[0] as readonly string[]) ?? [];
}
