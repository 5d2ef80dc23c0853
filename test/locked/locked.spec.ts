import { ContextIdFactory } from '@nestjs/core';
import { Injectable, NotFoundException, Scope, SetMetadata } from '@nestjs/common';
import { Observable, of } from 'rxjs';
import {
  InvalidArgumentError,
  LockBusyError,
  Locked,
  RedlockError,
  RedlockEventMap,
  RedlockModule,
  RedlockService,
} from '../../lib';
import { useRedisNodes } from '../support';
import { RecordingLogger, TEST_OPTIONS, closeApps, createApp, keyOf, valuesOnNodes } from '../nest/helpers';
import { scriptOnKey, watchCommands } from './node-commands';

const ROLE = 'test:role';

/** The next `event` (busy, acquired) of `resource` on `redlock`. */
function nextEvent<E extends 'busy' | 'acquired'>(
  redlock: RedlockService,
  event: E,
  resource: string,
): Promise<RedlockEventMap[E]> {
  return new Promise((resolve) => {
    const off = redlock.on(event, (payload: RedlockEventMap[E]) => {
      if (!payload.resources.includes(resource)) return;
      off();
      resolve(payload);
    });
  });
}

@Injectable()
class Orders {
  runs = 0;
  constructor(readonly redlock: RedlockService) {}

  @SetMetadata(ROLE, 'above')
  @Locked('order:<0>')
  @SetMetadata('test:below', 'below')
  async pay(orderId: string, amount: number): Promise<string> {
    this.runs++;
    const lock = this.redlock.current()!;
    return `${orderId}:${amount}:${lock.ttl}`;
  }

  @Locked('order:<0>', { ttl: 1_500 })
  async inspect(orderId: string, check: (lock: unknown) => Promise<unknown>) {
    return check(this.redlock.current());
  }

  @Locked('order:<0>', { fencing: true })
  async fenced(orderId: string) {
    return this.redlock.current()!.fencingToken;
  }

  @Locked('order:<0>')
  async fail(orderId: string, error: Error): Promise<never> {
    throw error;
  }

  @Locked('order:<0>', { onBusy: 'skip' })
  async skipWhenBusy(orderId: string) {
    this.runs++;
    return 'ran';
  }

  @Locked('order:<0>', { onBusy: 'skip', wait: 3_000 })
  async skipAfterWaiting(orderId: string) {
    this.runs++;
    return 'ran';
  }

  @Locked('order:<0>', { wait: 0 })
  async throwWhenBusy(orderId: string) {
    this.runs++;
    return 'ran';
  }

  // No return type annotation: the decorator cannot know it returns an Observable.
  @Locked('order:<0>')
  unannotated(orderId: string) {
    return of(orderId);
  }
}

@Injectable({ scope: Scope.TRANSIENT })
class TransientJob {
  constructor(readonly redlock: RedlockService) {}
  @Locked('job:<0>')
  async run(id: string) {
    return this.redlock.current()?.resources;
  }
}

@Injectable({ scope: Scope.REQUEST })
class RequestJob {
  constructor(readonly redlock: RedlockService) {}
  @Locked('request-job:<0>')
  async run(id: string) {
    return this.redlock.current()?.resources;
  }
}

describe('@Locked (3 real nodes)', () => {
  const nodes = useRedisNodes(3, {
    afterEach: async () => {
      for (const node of nodes.nodes) if (node.paused) await node.resume();
      await closeApps();
    },
  });
  let orders: Orders;
  let redlock: RedlockService;
  const logger = new RecordingLogger();

  beforeEach(async () => {
    logger.lines.length = 0;
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, ttl: 4_321, logger })],
      providers: [Orders, TransientJob, RequestJob],
    });
    orders = app.get(Orders);
    redlock = app.get(RedlockService);
  });

  it("keeps the method's name, length, design:* metadata and other decorators' metadata (either order)", () => {
    const pay = Orders.prototype.pay;
    expect(pay.name).toBe('pay');
    expect(pay.length).toBe(2);
    expect(Reflect.getMetadata(ROLE, pay)).toBe('above');
    expect(Reflect.getMetadata('test:below', pay)).toBe('below');
    expect(Reflect.getMetadata('design:paramtypes', Orders.prototype, 'pay')).toEqual([String, Number]);
    expect(Reflect.getMetadata('design:returntype', Orders.prototype, 'pay')).toBe(Promise);
  });

  it('holds the lock while the method runs, releases it afterwards, and passes the result through', async () => {
    const seen = (await orders.inspect('7', () => valuesOnNodes(nodes, keyOf('order:7')))) as (
      string | null
    )[];
    expect(seen).toHaveLength(3);
    expect(new Set(seen).size).toBe(1);
    expect(seen[0]).toEqual(expect.any(String));
    expect(await valuesOnNodes(nodes, keyOf('order:7'))).toEqual([null, null, null]);
    expect(await orders.pay('7', 30)).toBe('7:30:4321'); // the module's ttl is the default
  });

  it('passes per-method options to the lock (ttl) and any other core option (fencing)', async () => {
    expect(await orders.inspect('8', async (lock) => (lock as { ttl: number }).ttl)).toBe(1_500);
    const [first, second] = [await orders.fenced('8'), await orders.fenced('8')];
    expect(typeof first).toBe('number');
    expect(second).toBeGreaterThan(first!);
  });

  it("passes the method's own errors through unchanged and releases the lock", async () => {
    const notFound = new NotFoundException('order 9 not found');
    await expect(orders.fail('9', notFound)).rejects.toBe(notFound);
    expect(await valuesOnNodes(nodes, keyOf('order:9'))).toEqual([null, null, null]);
  });

  it('a failed release hides neither the result nor the error', async () => {
    const pauseAll = () => Promise.all(nodes.nodes.map((node) => node.pause()));
    // Every node stops answering while the method runs, so its release reaches none of them.
    await expect(orders.inspect('10', async () => (await pauseAll(), 'result'))).resolves.toBe('result');
    for (const node of nodes.nodes) await node.resume();

    const failure = new Error('handler failed');
    await expect(
      orders.inspect('11', async () => {
        await pauseAll();
        throw failure;
      }),
    ).rejects.toBe(failure);
  });

  describe('when the lock is busy', () => {
    it("onBusy 'throw' (default) rejects with LockBusyError naming the resource, without running", async () => {
      const held = await redlock.acquire('order:12');
      const error = await orders.throwWhenBusy('12').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockBusyError);
      expect((error as LockBusyError).resources).toEqual(['order:12']);
      expect((error as Error).message).toContain('"order:12"');
      expect(orders.runs).toBe(0);
      await redlock.release(held);
    });

    it("onBusy 'skip' resolves undefined without running, logs at debug level, and tries once by default", async () => {
      const held = await redlock.acquire('order:13');
      const busy = nextEvent(redlock, 'busy', 'order:13');
      expect(await orders.skipWhenBusy('13')).toBeUndefined();
      // It gave up after its first attempt: it did not wait for the holder (who had not released yet).
      expect((await busy).attempts).toBe(1);
      await redlock.release(held);
      expect(orders.runs).toBe(0);
      expect(logger.messages('debug')).toContain(
        `Orders.skipWhenBusy skipped: "order:13" is held elsewhere (onBusy: 'skip').`,
      );
    });

    it("onBusy 'skip' with an explicit wait waits first", async () => {
      const held = await redlock.acquire('order:14');
      const watch = await watchCommands(nodes);
      try {
        const acquired = nextEvent(redlock, 'acquired', 'order:14');
        const outcome = orders.skipAfterWaiting('14');
        // Released once its first attempt was refused on every node: it can only run by waiting.
        await watch.seenOnEveryNode(scriptOnKey(keyOf('order:14'), held.value));
        await redlock.release(held);
        expect(await outcome).toBe('ran');
        expect((await acquired).attempts).toBeGreaterThan(1);
      } finally {
        watch.stop();
      }
    });
  });

  it('reaches the service in transient and request-scoped providers', async () => {
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [TransientJob, RequestJob],
    });
    expect(await (await app.resolve(TransientJob)).run('a')).toEqual(['job:a']);
    const request = await app.resolve(RequestJob, ContextIdFactory.create());
    expect(await request.run('b')).toEqual(['request-job:b']);
  });

  it('an instance not created by Nest gets a clear error naming the class and method', async () => {
    const stray = new Orders(redlock);
    const error = await stray.pay('1', 2).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedlockError);
    expect((error as Error).message).toMatch(
      /^Orders\.pay is decorated with @Locked, but this instance has no LockedSections: it was not created by Nest/,
    );
  });

  it('an Observable returned where a Promise was expected is refused clearly, and the lock released', async () => {
    const error = await (orders.unannotated('15') as unknown as Promise<unknown>).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/^Orders\.unannotated returned an Observable/);
    expect((error as Error).message).toContain('unannotated(...): Observable<T>');
    expect(await valuesOnNodes(nodes, keyOf('order:15'))).toEqual([null, null, null]);
  });

  describe('refuses misuse when the class is defined', () => {
    it('static methods', () => {
      expect(() => {
        class Bad {
          @Locked('x')
          static async work() {}
        }
        return Bad;
      }).toThrow(/@Locked cannot decorate the static method Bad\.work/);
    });

    it('synchronous methods: a TypeScript error, and refused at definition when the return type is known', () => {
      expect(() => {
        class Sync {
          // @ts-expect-error a synchronous method cannot wait for a lock
          @Locked('x')
          work(): number {
            return 1;
          }
        }
        return Sync;
      }).toThrow('@Locked cannot decorate Sync.work: it is declared to return Number, synchronously');
    });
  });

  it('the key is rendered per call: waiting while another owner holds it, then running', async () => {
    const held = await redlock.acquire('order:16');
    const watch = await watchCommands(nodes);
    const order: string[] = [];
    try {
      const paid = orders.pay('16', 1).then((result) => (order.push('paid'), result));
      // Its first attempt was refused on every node (the key rendered per call: order:16).
      await watch.seenOnEveryNode(scriptOnKey(keyOf('order:16'), held.value));
      expect(orders.runs).toBe(0);
      await redlock.release(held);
      order.push('released');
      expect(await paid).toBe('16:1:4321');
      // It waited: it ran only after the holder released.
      expect(order).toEqual(['released', 'paid']);
    } finally {
      watch.stop();
    }
  });
});

// Compile-time check of the decorator's type: an Observable method is accepted.
class TypeCheck {
  @Locked('x')
  stream(): Observable<number> {
    return of(1);
  }
}
void TypeCheck;
