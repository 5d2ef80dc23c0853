import { metrics, trace } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { Injectable } from '@nestjs/common';
import { Locked, Redlock, RedlockModule, RedlockService, instrumentRedlock } from '../../lib';
import { TEST_OPTIONS, closeApps, createApp, gate } from '../nest/helpers';
import { useRedisNodes } from '../support';

/**
 * instrumentRedlock with the OpenTelemetry SDK's in-memory exporters, against real nodes: the spans of
 * acquire (acquired, busy, unavailable), extend and release, and the metrics, with no resource attribute
 * unless asked for.
 */
describe('OpenTelemetry (3 real nodes, in-memory exporters)', () => {
  let spans: InMemorySpanExporter;
  let tracerProvider: BasicTracerProvider;
  let metricExporter: InMemoryMetricExporter;
  let reader: PeriodicExportingMetricReader;
  let meterProvider: MeterProvider;

  const nodes = useRedisNodes(3, {
    afterEach: async () => {
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
    },
  });
  beforeEach(() => {
    spans = new InMemorySpanExporter();
    tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 60_000 });
    meterProvider = new MeterProvider({ readers: [reader] });
  });

  async function collected(): Promise<Map<string, { value: unknown; attributes: object }[]>> {
    await reader.forceFlush();
    const byName = new Map<string, { value: unknown; attributes: object }[]>();
    for (const resource of metricExporter.getMetrics()) {
      for (const scope of resource.scopeMetrics) {
        for (const metric of scope.metrics) {
          byName.set(
            metric.descriptor.name,
            metric.dataPoints.map((point) => ({ value: point.value, attributes: point.attributes })),
          );
        }
      }
    }
    return byName;
  }

  it('spans for acquire, extend and release, with outcome and attempts; metrics for waits, holds and busy', async () => {
    const redlock = new Redlock(nodes.urls, { restartGuard: false, logger: false });
    const stop = instrumentRedlock(redlock, {
      tracer: tracerProvider.getTracer('test'),
      meter: meterProvider.getMeter('test'),
    });
    try {
      await redlock.connect();
      const lock = await redlock.acquire('otel:1');
      await redlock.extend(lock);
      expect(await redlock.tryAcquire('otel:1')).toBeNull();
      await redlock.release(lock);

      const finished = spans
        .getFinishedSpans()
        .map((span) => ({ name: span.name, attributes: span.attributes }));
      expect(finished).toEqual([
        {
          name: 'redlock.acquire',
          attributes: {
            'redlock.outcome': 'acquired',
            'redlock.attempts': 1,
            'redlock.resource_count': 1,
            'redlock.fencing': false,
            'redlock.mode': 'write',
          },
        },
        { name: 'redlock.extend', attributes: { 'redlock.outcome': 'extended' } },
        {
          name: 'redlock.acquire',
          attributes: {
            'redlock.outcome': 'busy',
            'redlock.attempts': 1,
            'redlock.resource_count': 1,
            'redlock.mode': 'write',
          },
        },
        // released_on: the nodes that had deleted the key when release() resolved, at the quorum of 2.
        { name: 'redlock.release', attributes: { 'redlock.released_on': 2 } },
      ]);
      // Low cardinality: the lock key is not an attribute unless asked for.
      expect(JSON.stringify(finished)).not.toContain('otel:1');

      const metricsSeen = await collected();
      expect(metricsSeen.get('redlock.acquire.busy')).toEqual([{ value: 1, attributes: {} }]);
      const durations = metricsSeen.get('redlock.acquire.duration')!;
      expect(durations.map((point) => point.attributes)).toEqual(
        expect.arrayContaining([
          { 'redlock.outcome': 'acquired', 'redlock.mode': 'write' },
          { 'redlock.outcome': 'busy', 'redlock.mode': 'write' },
        ]),
      );
      // A reader and a permit holder carry their kind on the span and the wait metric.
      spans.reset();
      await (await redlock.acquire('otel:read', { mode: 'read' })).release();
      await (await redlock.acquire('otel:pool', { permits: 3 })).release();
      expect(
        spans
          .getFinishedSpans()
          .filter((span) => span.name === 'redlock.acquire')
          .map((span) => [span.attributes['redlock.mode'], span.attributes['redlock.permits']]),
      ).toEqual([
        ['read', undefined],
        ['write', 3],
      ]);
      const heldFor = metricsSeen.get('redlock.lock.held')![0].value as { count: number; sum: number };
      expect(heldFor.count).toBe(1);
      expect(heldFor.sum).toBeGreaterThanOrEqual(0);
    } finally {
      stop();
      await redlock.quit();
    }
  });

  it('held and waiting by @Locked key template (one series per template, none per resource), direct calls apart', async () => {
    const inside = gate();
    const release = gate();
    let entered = 0;
    @Injectable()
    class Orders {
      @Locked('order:<0>')
      async pay(id: string) {
        if (++entered === 2) inside.open(); // both first calls hold their lock
        await release.promise;
        return id;
      }
    }
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [Orders],
    });
    const service = app.get(RedlockService);
    const stop = instrumentRedlock(service, { tracer: false, meter: meterProvider.getMeter('test') });
    try {
      const orders = app.get(Orders);
      const paying = [orders.pay('a1'), orders.pay('b2')];
      await inside.promise;
      const waiter = orders.pay('a1'); // waits for the first 'a1'
      const direct = await service.acquire('direct:1');
      // The waiter counts as waiting from its call on (its acquisition begins synchronously).
      expect(service.stats.heldByTemplate).toEqual(
        new Map([
          ['order:<0>', 2],
          ['', 1],
        ]),
      );
      expect(service.stats.waitingByTemplate).toEqual(new Map([['order:<0>', 1]]));
      const held = (await collected()).get('redlock.locks.held')!;
      expect(held).toEqual(
        expect.arrayContaining([
          { value: 2, attributes: { 'redlock.template': 'order:<0>' } },
          { value: 1, attributes: {} },
        ]),
      );
      expect(held).toHaveLength(2);
      const waiting = (await collected()).get('redlock.acquire.waiting')!;
      expect(waiting).toEqual([{ value: 1, attributes: { 'redlock.template': 'order:<0>' } }]);
      // Never a resource: the rendered keys appear in no series.
      expect(JSON.stringify([held, waiting])).not.toMatch(/a1|b2|direct:1/);
      release.open();
      await Promise.all([...paying, waiter]);
      await direct.release();
      expect(service.stats.heldByTemplate).toEqual(new Map());
    } finally {
      stop();
      await closeApps();
    }
  });

  it('fair waiting: the longest queue a caller waits in, by @Locked template (place from the nodes)', async () => {
    @Injectable()
    class Tickets {
      @Locked('ticket:<0>', { fair: true, wait: 10_000 })
      async sell(id: string) {
        return id;
      }
    }
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [Tickets],
    });
    const service = app.get(RedlockService);
    const stop = instrumentRedlock(service, { tracer: false, meter: meterProvider.getMeter('test') });
    const other = new Redlock(nodes.urls, { ...TEST_OPTIONS, fair: true });
    try {
      await other.connect();
      const gauge = async () => (await collected()).get('redlock.acquire.queue');
      const holder = await other.acquire('ticket:7');
      // Another instance's fair waiter stands first in line; the app's caller comes second.
      const first = new Promise<void>((resolve) => other.on('waiting', () => resolve()));
      const ahead = other.acquire('ticket:7', { wait: 10_000 });
      await first;
      const placed = new Promise<number>((resolve) => service.on('waiting', (e) => resolve(e.position)));
      const selling = app.get(Tickets).sell('7');
      expect(await placed).toBe(2);
      expect(service.stats.queuedByTemplate).toEqual(new Map([['ticket:<0>', 2]]));
      expect(await gauge()).toEqual([{ value: 2, attributes: { 'redlock.template': 'ticket:<0>' } }]);
      await holder.release();
      await (await ahead).release();
      expect(await selling).toBe('7');
      expect(service.stats.queuedByTemplate).toEqual(new Map());
      // The SDK keeps a series once seen (cumulative): the template's is empty now, the total 0.
      expect(await gauge()).toContainEqual({ value: 0, attributes: {} });
    } finally {
      stop();
      await other.quit();
      await closeApps();
    }
  });

  it('gauges of locks held, callers waiting and renewals failed; a counter of revocations', async () => {
    const redlock = new Redlock(nodes.urls, { restartGuard: false, logger: false });
    const other = new Redlock(nodes.urls, { restartGuard: false, logger: false });
    const stop = instrumentRedlock(redlock, { tracer: false, meter: meterProvider.getMeter('test') });
    try {
      await Promise.all([redlock.connect(), other.connect()]);
      const gauge = async (name: string) => (await collected()).get(name)?.[0]?.value;
      const a = await redlock.acquire('g:1');
      const b = await redlock.acquire('g:2');
      const blocker = await other.acquire('g:3', { ttl: 5_000 });
      const waiting = redlock.acquire('g:3', { wait: 5_000 }); // waiting from the call on: no sleep needed
      expect(await gauge('redlock.locks.held')).toBe(2);
      expect(await gauge('redlock.acquire.waiting')).toBe(1);
      await blocker.release();
      const c = await waiting;
      expect(await gauge('redlock.acquire.waiting')).toBe(0);
      expect(await gauge('redlock.locks.held')).toBe(3);
      await a.release();
      expect(await gauge('redlock.locks.held')).toBe(2);
      await redlock.revoke('g:2', { reason: 'test' });
      expect((await collected()).get('redlock.lock.revocations')).toEqual([{ value: 1, attributes: {} }]);
      expect(await gauge('redlock.locks.held')).toBe(1);
      await c.release();
      // A renewal that finds its keys gone fails (and the lock is lost): counted; a manual extend is not one.
      expect(await gauge('redlock.renewals.failed')).toBe(0);
      const short = await redlock.acquire('g:4', { ttl: 300 });
      for (const node of nodes.nodes) {
        const admin = node.redis();
        await admin.del('redlock:{g:4}');
        admin.disconnect();
      }
      const lost = new Promise((resolve) => short.signal.addEventListener('abort', resolve, { once: true }));
      const stopRenewal = redlock.keepAlive(short);
      await lost;
      stopRenewal();
      expect(await gauge('redlock.renewals.failed')).toBe(1);
      expect(await gauge('redlock.locks.held')).toBe(0); // a lost lock is not held
      await short.release();
    } finally {
      stop();
      await Promise.all([redlock.quit(), other.quit()]);
    }
  });

  it('an unavailable quorum: an error span, the unavailable counter and node errors per node', async () => {
    const redlock = new Redlock(nodes.urls, { restartGuard: false, logger: false, nodeTimeout: 50, wait: 0 });
    const stop = instrumentRedlock(redlock, {
      tracer: tracerProvider.getTracer('test'),
      meter: meterProvider.getMeter('test'),
      resourceAttribute: true,
    });
    await redlock.connect();
    await nodes.nodes[1].kill();
    await nodes.nodes[2].kill();
    try {
      await expect(redlock.acquire('otel:2')).rejects.toThrow(/Could not lock/);
      const [span] = spans.getFinishedSpans();
      expect(span.name).toBe('redlock.acquire');
      expect(span.attributes['redlock.outcome']).toBe('unavailable');
      expect(span.attributes['redlock.resources']).toBe('otel:2');
      expect(span.status.code).toBe(2);
      const metricsSeen = await collected();
      expect(metricsSeen.get('redlock.acquire.unavailable')).toEqual([{ value: 1, attributes: {} }]);
      // One series per node and operation (the acquire, and the clean-up release after it), both dead nodes.
      const errors = metricsSeen
        .get('redlock.node.errors')!
        .map((point) => point.attributes as Record<string, string>);
      const dead = [nodes.nodes[1].port, nodes.nodes[2].port].map((port) => `127.0.0.1:${port}`);
      for (const node of dead) {
        expect(errors).toContainEqual({ 'redlock.node': node, 'redlock.operation': 'acquire' });
      }
      expect(errors.every((point) => dead.includes(point['redlock.node']))).toBe(true);
    } finally {
      stop();
      await redlock.quit();
      await nodes.nodes[1].start();
      await nodes.nodes[2].start();
    }
  });

  it('without a tracer or meter it uses the global OpenTelemetry API (a no-op until an SDK is registered)', async () => {
    const redlock = new Redlock(nodes.urls, { restartGuard: false, logger: false });
    const stop = instrumentRedlock(redlock);
    try {
      expect(trace.getTracer('x')).toBeDefined();
      expect(metrics.getMeter('x')).toBeDefined();
      await redlock.release(await redlock.acquire('otel:3'));
    } finally {
      stop();
      await redlock.quit();
    }
  });
});
