import type {
  AcquireReply,
  AcquireRequest,
  ExtendItem,
  LockNode,
  NodeReading,
  PermitsReading,
  ReleaseListener,
  RevokeRequest,
} from '../core';
import { InvalidArgumentError, describe, withTimeout } from '../core';
import { ScriptModel } from './script-model';

/** Wall-clock time (`Date.now()`, faked along with the timers by `jest.useFakeTimers()`), as a model clock. */
const dateClock = {
  now: () => Date.now(),
  wallMicros: () => Date.now() * 1000,
};

/**
 * One in-memory lock node: the model of the Lua scripts that the simulation runs and that the differential
 * test checks against real Redis, behind the same port as a Redis node. Time is `Date.now()`, so Jest's fake
 * timers move it together with the core's clock. Each command runs atomically when called and answers a
 * microtask later, in call order.
 *
 * It can be made to fail: {@link pause} (no answer until {@link resume}), {@link down} (every call fails at
 * once) and {@link loseData} (a restart that lost every key). Nodes are shared by every instance they are
 * given to, as Redis servers are; `close()` (called by each instance's `quit()`) leaves them usable.
 */
export class MemoryNode implements LockNode {
  /** Commands run in the order they were sent (one connection). */
  readonly ordered = true;
  readonly guardMode = 'uptime' as const;
  private readonly model: ScriptModel;
  private unreachable = false;
  /** How far {@link stepClock} moved this node's wall clock from `Date.now()`, in ms. */
  private clockOffset = 0;
  private readonly wallClock = {
    now: () => dateClock.now() + this.clockOffset,
    wallMicros: () => (dateClock.now() + this.clockOffset) * 1000,
  };

  /**
   * @param name how messages name this node.
   * @param restartGuard whether the node's uptime counts from its creation and from each {@link loseData}, so
   *   that the restart guard refuses new locks there for its window as on Redis; false: the node skips the guard.
   */
  constructor(
    readonly name: string,
    private readonly restartGuard = false,
  ) {
    this.model = new ScriptModel(
      this.wallClock,
      { name, uptimeGranularity: 1000, infoReadable: true },
      dateClock.wallMicros(),
    );
  }

  /** What identifies the server behind the node (Redis' run_id): new after {@link loseData}. */
  get serverId(): string {
    return this.model.runId;
  }

  /**
   * Every call fails at once while true (an unreachable node, its data kept). Going down drops the release
   * subscriptions (their listeners hear `'lost'`); the revocation channel's stay, as a client that subscribes
   * again on reconnecting would have them. Calls already waiting on a paused node wait for {@link resume}.
   */
  get down(): boolean {
    return this.unreachable;
  }
  set down(down: boolean) {
    if (down && !this.unreachable) this.model.dropWatchers();
    this.unreachable = down;
  }

  /** Whether the node is paused: calls wait, unanswered, until {@link resume}. */
  get paused(): boolean {
    return this.model.paused;
  }

  /** Stops answering: calls wait (and time out in the caller) until {@link resume}. */
  pause(): void {
    this.model.pause();
  }

  /** Answers again: the calls that waited run now, in the order they were sent. */
  resume(): void {
    this.model.resume();
  }

  /**
   * A restart that lost its data: every key gone (locks, fence counters, readers), release subscriptions told
   * they may have missed announcements, a new run_id; with the restart guard on, uptime from zero.
   */
  loseData(): void {
    const paused = this.model.paused;
    this.model.crash();
    this.model.restart();
    if (paused) this.model.pause();
  }

  /**
   * Steps this node's wall clock by `ms` (positive: forward), as an NTP step, a resumed VM or `date -s` does to
   * a server: keys expire by that clock (a forward step ends them early) and `TIME` answers with it, so an
   * instance sees the step and stops counting the node's grants for a while (`detectClockSteps`).
   */
  stepClock(ms: number): void {
    if (typeof ms !== 'number' || !Number.isFinite(ms)) {
      throw new InvalidArgumentError(
        `MemoryNode.stepClock(ms): ms must be a finite number, got ${describe(ms)}`,
      );
    }
    this.clockOffset += ms;
  }

  /** The value of `key` on this node now, or undefined (for assertions). */
  peek(key: string): string | undefined {
    return this.model.peek(key);
  }

  /** Every key this node holds now (for assertions). */
  keys(): string[] {
    return this.model.scan('*', Infinity);
  }

  acquire(request: AcquireRequest): Promise<AcquireReply> {
    // Without the guard, the node answers as one long up: the guard window is skipped.
    const asked = this.restartGuard ? request : { ...request, guardWindow: 0 };
    return this.call(() => this.model.acquire(asked));
  }

  fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    owner: string,
    token: number,
    readers?: readonly string[],
  ): Promise<boolean> {
    return this.call(() => this.model.fence(keys, fenceKeys, owner, token, readers));
  }

  extend(keys: readonly string[], owner: string, ttl: number, readers?: readonly string[]): Promise<boolean> {
    return this.call(() => this.model.extend(keys, owner, ttl, readers));
  }

  extendMany(items: readonly ExtendItem[]): Promise<boolean[]> {
    return this.call(() => this.model.extendMany(items));
  }

  release(keys: readonly string[], owner: string, readers?: readonly string[]): Promise<number> {
    return this.call(() => this.model.release(keys, owner, readers));
  }

  clearIntent(intentKeys: readonly string[], intent: string, queueKeys?: readonly string[]): Promise<number> {
    return this.call(() => this.model.clearIntent(intentKeys, intent, queueKeys));
  }

  limit(key: string, permits: number, ttl: number): Promise<number> {
    return this.call(() => this.model.limit(key, permits, ttl));
  }

  readPermits(
    key: string,
    permitKeys: readonly string[],
    permits: number,
    ttl: number,
    next?: number,
  ): Promise<PermitsReading> {
    return this.call(() => this.model.readPermits(key, permitKeys, permits, ttl, next));
  }

  inspect(keys: readonly string[]): Promise<NodeReading> {
    return this.call(() => this.model.inspect(keys));
  }

  scanKeys(pattern: string, limit: number): Promise<string[]> {
    return this.call(() => this.model.scan(pattern, limit));
  }

  revoke(request: RevokeRequest): Promise<number> {
    return this.call(() => this.model.revoke(request));
  }

  watch(keys: readonly string[], listener: ReleaseListener): Promise<() => void> {
    return this.call(() => {
      let listening = true;
      const unsubscribe = this.model.subscribe(keys, {
        active: true,
        // A pushed message arrives after the script that published it (a promise: not faked by Jest's timers).
        push: (event) => void Promise.resolve().then(() => listening && listener(event)),
      });
      return () => {
        listening = false;
        unsubscribe();
      };
    });
  }

  subscribeToChannel(channel: string, onMessage: (message: string) => void): Promise<() => void> {
    return this.call(() => {
      let listening = true;
      const unsubscribe = this.model.subscribeChannel(channel, (message) => {
        void Promise.resolve().then(() => listening && onMessage(message));
      });
      return () => {
        listening = false;
        unsubscribe();
      };
    });
  }

  /** The uptime (ms, a lower bound as INFO gives it), or undefined without the restart guard (never held back). */
  probe(): Promise<number | undefined> {
    return this.call(() => (this.restartGuard ? this.model.uptimeForTest() : undefined));
  }

  connect(timeout: number): Promise<void> {
    return withTimeout(
      this.call(() => undefined),
      timeout,
      () => new Error(`${this.name}: no answer within ${timeout} ms (paused)`),
    );
  }

  /** Nothing to let go of (no socket, no timer); the node stays usable by the other instances sharing it. */
  async close(): Promise<void> {}

  /** Runs `script` on the model as a command: now, after resume() (paused), or not at all (down). */
  private call<T>(script: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.unreachable) return reject(new Error(`${this.name} is down (a memory node made unreachable)`));
      this.model.deliver(0, () => {
        try {
          resolve(script());
        } catch (error) {
          reject(error);
        }
      });
    });
  }
}
