import type { AcquireReply, AcquireRequest, ExtendItem, LockNode } from '../../../lib/core';
import type { SimContext } from './context';
import type { Subscription, VirtualServer } from './server';

/** How messages travel between one client and one node. Delays are in true ms. */
export interface LinkSpec {
  /** Usual one-way delay range. */
  readonly latency: readonly [number, number];
  /** Chance that a message is slow instead, with a delay drawn from `slowDelay`. */
  readonly slowChance: number;
  readonly slowDelay: readonly [number, number];
  /** Chance that a request (or a reply) is lost. */
  readonly lossChance: number;
  /**
   * Chance that a request is re-sent late and runs after requests sent later on this connection (a Cluster
   * client's MOVED/ASK/TRYAGAIN retry, a re-send after NOSCRIPT or a reconnect), and the extra delay it takes.
   */
  readonly reorderChance: number;
  readonly reorderDelay: readonly [number, number];
}

/**
 * An error of the simulated network, without a stack trace: the core reads only its message (votes, events),
 * and capturing a stack for each of the ~10 lost or refused messages per schedule is a measurable cost.
 */
function networkError(message: string): Error {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  const error = new Error(message);
  Error.stackTraceLimit = limit;
  return error;
}

/** Subscriptions that are not confirmed within this many ms fail (as `ChannelHub` does). */
const SUBSCRIBE_TIMEOUT = 250;

/**
 * One client's connection to one {@link VirtualServer}, as the core sees it: a {@link LockNode}. Requests and
 * replies are separate messages, each delayed or lost; each direction is FIFO (a TCP connection), so a
 * request never overtakes an earlier one on the same connection — except a request drawn for the reordering
 * fault, which runs late, after later ones — while different connections are unordered.
 * A lost request never runs; a lost reply comes after the command ran. Either way the caller sees a timeout
 * or, sometimes, a connection error. A node that is down answers with an error.
 */
export class Connection implements LockNode {
  readonly name: string;
  /** Release announcements, when the schedule's nodes offer them (the core then wakes waiters early). */
  readonly watch?: LockNode['watch'];
  /** Until this true time, every message on this link is lost (an asymmetric partition). */
  cutUntil = -1;
  private lastArrival = 0;
  /** Arrival times of requests re-sent late (the reordering fault) that no later request overtook yet. */
  private lateArrivals: number[] = [];
  private lastReply = 0;
  /**
   * The client's first sample of this node's clock (an answer carrying `TIME` that reached it): when the node
   * read its clock for it, in true time. Undefined until then. The core's clock-step check judges every
   * later answer against the samples before it; the first one is its baseline (docs/DESIGN.md §17).
   */
  firstSampleReadAt: number | undefined;
  /** Every sample's read time, in order (true time). */
  readonly samplesReadAt: number[] = [];

  constructor(
    private readonly context: SimContext,
    readonly id: number,
    private readonly client: number,
    private readonly server: VirtualServer,
    private readonly link: LinkSpec,
    watchable: boolean,
  ) {
    this.name = server.name;
    if (watchable) this.watch = (keys, listener) => this.subscribe(keys, listener);
  }

  acquire(given: AcquireRequest): Promise<AcquireReply> {
    let readAt = 0;
    // A fair call's ticket (its intent id) named by first appearance: nodes order tickets that arrived in the
    // same ms by their bytes, and the core draws owner values from crypto (outside the seed).
    const request =
      given.queueKeys !== undefined && given.intent !== undefined
        ? { ...given, intent: this.context.ownerName(given.intent) }
        : given;
    const run = () => {
      const reply = this.server.acquire(request);
      readAt = this.context.scheduler.now;
      if (request.queueKeys !== undefined)
        this.context.fairReply(
          request.owner,
          reply.outcome === 'acquired',
          reply.outcome === 'busy' && reply.queued === true,
        );
      if (reply.outcome === 'refused') {
        if (reply.basis === 'data-age') this.context.counters.refusedDataAge++;
        else this.context.counters.refusedUptime++;
      }
      return reply;
    };
    return this.call('acquire', request.owner, run, (reply) => {
      if (reply.outcome !== 'refused' && reply.time !== undefined) this.sampled(readAt);
    });
  }

  private sampled(readAt: number): void {
    this.firstSampleReadAt ??= readAt;
    this.samplesReadAt.push(readAt);
  }

  fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    owner: string,
    token: number,
    readers?: readonly string[],
  ): Promise<boolean> {
    return this.call('fence', owner, () => this.server.fence(keys, fenceKeys, owner, token, readers));
  }

  extend(keys: readonly string[], owner: string, ttl: number, readers?: readonly string[]): Promise<boolean> {
    return this.call('extend', owner, () => this.server.extend(keys, owner, ttl, readers));
  }

  /** The batched renewal: one message, every item applied in one step (as EXTEND_MANY runs atomically). */
  extendMany(items: readonly ExtendItem[]): Promise<boolean[]> {
    return this.call('extend-many', items[0].owner, () =>
      items.map((item) => this.server.extend(item.keys, item.owner, item.ttl, item.readers)),
    );
  }

  /** CLEAR_INTENT: an acquisition that ended takes its intent (and, fair, its tickets) back (§15, §18). */
  clearIntent(intentKeys: readonly string[], intent: string, queueKeys?: readonly string[]): Promise<number> {
    const named = queueKeys !== undefined ? this.context.ownerName(intent) : intent;
    return this.call('clear-intent', intent, () => this.server.clearIntent(intentKeys, named, queueKeys));
  }

  release(keys: readonly string[], owner: string, readers?: readonly string[]): Promise<number> {
    return this.call('release', owner, () => this.server.release(keys, owner, readers));
  }

  /** NEGATIVE CONTROL ONLY: the per-node counting semaphore (see `VirtualServer.countAcquire`). */
  countAcquire(key: string, limit: number, owner: string, ttl: number): Promise<boolean> {
    return this.call('count-acquire', owner, () => this.server.countAcquire(key, limit, owner, ttl));
  }

  countRelease(key: string, owner: string): Promise<number> {
    return this.call('count-release', owner, () => this.server.countRelease(key, owner));
  }

  private subscribe(
    keys: readonly string[],
    listener: (event: 'released' | 'lost') => void,
  ): Promise<() => void> {
    const { scheduler } = this.context;
    return new Promise((resolve, reject) => {
      const sent = scheduler.now;
      const fail = () =>
        scheduler.at(sent + SUBSCRIBE_TIMEOUT, () => reject(networkError('subscription not confirmed')));
      if (this.lost()) return void fail();
      scheduler.after(this.delay(), () => {
        if (!this.server.up || this.server.paused) return void fail();
        let listening = true;
        const subscription: Subscription = {
          active: true,
          push: (event) => {
            if (event === 'released' && this.lost()) return;
            scheduler.after(this.delay(), () => {
              if (listening) listener(event);
            });
          },
        };
        const unsubscribe = this.server.subscribe(keys, subscription);
        const stop = () => {
          listening = false;
          unsubscribe();
        };
        if (this.lost()) {
          stop();
          return void fail();
        }
        const at = scheduler.now + this.delay();
        if (at - sent > SUBSCRIBE_TIMEOUT) {
          stop();
          return void fail();
        }
        scheduler.at(at, () => resolve(stop));
      });
    });
  }

  /** One request and its reply; `delivered` sees the value as the reply reaches the client. */
  private call<T>(
    operation: string,
    owner: string,
    apply: () => T,
    delivered?: (value: T) => void,
  ): Promise<T> {
    const context = this.context;
    const { scheduler, counters } = context;
    counters.messages++;
    const label = context.tracing
      ? `c${this.client}->${this.name} ${operation} ${context.ownerName(owner)}`
      : '';
    return new Promise<T>((resolve, reject) => {
      if (this.lost()) {
        counters.lostRequests++;
        if (context.tracing) context.trace(`${label} request lost`);
        this.maybeReset(reject);
        return;
      }
      const { reorderChance, reorderDelay } = this.link;
      let arrival: number;
      if (reorderChance > 0 && context.rng.chance(reorderChance)) {
        // Re-sent late: later requests on this connection overtake it; it does not hold them back.
        arrival = scheduler.now + this.delay() + context.rng.real(reorderDelay[0], reorderDelay[1]);
        this.lateArrivals.push(arrival);
      } else {
        arrival = Math.max(scheduler.now + this.delay(), this.lastArrival);
        this.lastArrival = arrival;
        // Late requests this one overtakes: each counted once, when first overtaken.
        if (this.lateArrivals.length > 0) {
          const overtaken = this.lateArrivals.filter((late) => late > arrival).length;
          counters.reordered += overtaken;
          this.lateArrivals = this.lateArrivals.filter((late) => late <= arrival && late > scheduler.now);
        }
      }
      scheduler.at(arrival, () => {
        const outcome = this.server.deliver(this.id, () => {
          const value = apply();
          if (context.tracing) context.trace(`${label} ran -> ${JSON.stringify(value)}`);
          this.reply(
            label,
            () => {
              delivered?.(value);
              resolve(value);
            },
            reject,
          );
        });
        if (outcome === 'down') {
          if (context.tracing) context.trace(`${label} node down`);
          this.reply(label, () => reject(networkError(`${this.name}: connection refused`)), reject);
        } else if (outcome === 'queued' && context.tracing) context.trace(`${label} queued (paused)`);
      });
    });
  }

  private reply(label: string, deliver: () => void, reject: (error: Error) => void): void {
    const context = this.context;
    if (this.lost()) {
      context.counters.lostReplies++;
      if (context.tracing) context.trace(`${label} reply lost`);
      this.maybeReset(reject);
      return;
    }
    const at = Math.max(context.scheduler.now + this.delay(), this.lastReply);
    this.lastReply = at;
    context.scheduler.at(at, () => {
      if (context.tracing) context.trace(`${label} reply delivered`);
      deliver();
    });
  }

  /** A lost message: half the time the client notices a reset connection a little later, else it times out. */
  private maybeReset(reject: (error: Error) => void): void {
    const { rng, scheduler } = this.context;
    if (rng.chance(0.5)) {
      scheduler.after(this.delay() * 2, () => reject(networkError(`${this.name}: connection reset`)));
    }
  }

  private lost(): boolean {
    return this.context.scheduler.now < this.cutUntil || this.context.rng.chance(this.link.lossChance);
  }

  private delay(): number {
    const { rng } = this.context;
    const link = this.link;
    const range = rng.chance(link.slowChance) ? link.slowDelay : link.latency;
    return rng.real(range[0], range[1]);
  }
}
