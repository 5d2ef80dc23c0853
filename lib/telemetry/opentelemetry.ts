import {
  InvalidArgumentError,
  type RedlockEventMap,
  type RedlockEventName,
  type RedlockStats,
} from '../core';

/**
 * OpenTelemetry for locks, from the typed events: spans for acquire, extend and release (with their outcome
 * and attempt count), histograms of how long acquisitions waited and locks were held, counters of busy and
 * unavailable acquisitions, lost locks, revocations and node errors; gauges of locks held, callers waiting, the
 * longest fair queue and renewals failed (from the source's `stats`). `@opentelemetry/api` is an optional peer: it is
 * loaded only when no tracer or meter is given. Attributes stay low-cardinality — never the lock's
 * resources unless `resourceAttribute` asks for them.
 */

/** What this needs of an OpenTelemetry `Span`. */
export interface SpanLike {
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(endTime?: number): void;
}

/** What this needs of an OpenTelemetry `Tracer` (`trace.getTracer(name)`). */
export interface TracerLike {
  startSpan(
    name: string,
    options?: { startTime?: number; attributes?: Record<string, string | number | boolean> },
  ): SpanLike;
}

/** What this needs of an OpenTelemetry `Meter` (`metrics.getMeter(name)`). */
export interface MeterLike {
  createHistogram(
    name: string,
    options?: { description?: string; unit?: string },
  ): {
    record(value: number, attributes?: Record<string, string | number | boolean>): void;
  };
  createCounter(
    name: string,
    options?: { description?: string; unit?: string },
  ): {
    add(value: number, attributes?: Record<string, string | number | boolean>): void;
  };
  /** Optional (OpenTelemetry API ≥ 1.3): gauges read when the SDK collects. Without it, no gauges. */
  createObservableGauge?(name: string, options?: { description?: string; unit?: string }): ObservableLike;
}

/** What this needs of an OpenTelemetry observable instrument. */
export interface ObservableLike {
  addCallback(callback: (result: ObservableResultLike) => void): void;
  removeCallback(callback: (result: ObservableResultLike) => void): void;
}

/** What a gauge's callback reports to: one value per series (the attributes tell the series apart). */
export interface ObservableResultLike {
  observe(value: number, attributes?: Record<string, string>): void;
}

/** Anything with the typed events: a core `Redlock` or the Nest `RedlockService`. */
export interface RedlockEventSource {
  on<E extends RedlockEventName>(event: E, listener: (payload: RedlockEventMap[E]) => void): () => void;
  /** Its counters and gauges: with them (and a meter that has observable gauges), the gauges are recorded too. */
  readonly stats?: Pick<RedlockStats, 'held' | 'waiting' | 'renewalsFailed'> &
    Partial<Pick<RedlockStats, 'heldByTemplate' | 'waitingByTemplate' | 'queuedByTemplate'>>;
}

/** Options of {@link instrumentRedlock}. */
export interface RedlockTelemetryOptions {
  /** Default: `trace.getTracer('nestjs-redlock')` of `@opentelemetry/api`. `false`: no spans. */
  tracer?: TracerLike | false;
  /** Default: `metrics.getMeter('nestjs-redlock')` of `@opentelemetry/api`. `false`: no metrics. */
  meter?: MeterLike | false;
  /** Add `redlock.resources` (the lock's resources, joined) to spans. High cardinality: off by default. */
  resourceAttribute?: boolean;
}

const SCOPE = 'nestjs-redlock';
/** OpenTelemetry's `SpanStatusCode.ERROR`. */
const STATUS_ERROR = 2;

/**
 * Records spans and metrics for every lock operation of `source` until the returned function is called.
 *
 * ```ts
 * const stop = instrumentRedlock(app.get(RedlockService));
 * ```
 */
export function instrumentRedlock(
  source: RedlockEventSource,
  options: RedlockTelemetryOptions = {},
): () => void {
  const tracer =
    options.tracer === false ? undefined : (options.tracer ?? requiredApi().trace.getTracer(SCOPE));
  const meter =
    options.meter === false ? undefined : (options.meter ?? requiredApi().metrics.getMeter(SCOPE));
  const instruments = instrumentsOf(meter);
  const span = spanRecorder(tracer, options.resourceAttribute === true);
  const gauges = observeStats(meter, source.stats);
  const stops = listen(source, instruments, span);
  return () => {
    for (const stop of stops) stop();
    gauges();
  };
}

/** The histograms and counters of {@link instrumentRedlock} (none without a meter). */
function instrumentsOf(meter: MeterLike | undefined) {
  const waited = meter?.createHistogram('redlock.acquire.duration', {
    description: 'How long acquisitions took, all attempts included, by outcome',
    unit: 'ms',
  });
  const held = meter?.createHistogram('redlock.lock.held', {
    description: 'How long locks were held',
    unit: 'ms',
  });
  const busy = meter?.createCounter('redlock.acquire.busy', {
    description: 'Acquisitions that found the lock held',
  });
  const unavailable = meter?.createCounter('redlock.acquire.unavailable', {
    description: 'Acquisitions that found too few nodes',
  });
  const lost = meter?.createCounter('redlock.lock.lost', { description: 'Locks lost while held' });
  const nodeErrors = meter?.createCounter('redlock.node.errors', {
    description: 'Node errors, by node and operation',
  });
  const revoked = meter?.createCounter('redlock.lock.revocations', {
    description: 'Locks this instance revoked',
  });
  return { waited, held, busy, unavailable, lost, nodeErrors, revoked };
}

type Instruments = ReturnType<typeof instrumentsOf>;

/** Records one span of a finished operation, `elapsed` ms long, ending now (nothing without a tracer). */
type SpanRecorder = (
  name: string,
  elapsed: number,
  resources: readonly string[],
  attributes: Record<string, string | number | boolean>,
  error?: string,
) => void;

function spanRecorder(tracer: TracerLike | undefined, withResources: boolean): SpanRecorder {
  return (name, elapsed, resources, attributes, error) => {
    if (!tracer) return;
    const end = Date.now();
    const all = withResources ? { ...attributes, 'redlock.resources': resources.join(',') } : attributes;
    const started = tracer.startSpan(name, { startTime: end - elapsed, attributes: all });
    if (error) started.setStatus({ code: STATUS_ERROR, message: error });
    started.end(end);
  };
}

/** Subscribes the instruments and spans to `source`'s events; returns the functions that unsubscribe. */
function listen(source: RedlockEventSource, instruments: Instruments, span: SpanRecorder): (() => void)[] {
  const { waited, held, busy, unavailable, lost, nodeErrors, revoked } = instruments;
  return [
    source.on('acquired', (e) => {
      waited?.record(e.elapsed, { 'redlock.outcome': 'acquired', ...kindOf(e) });
      span('redlock.acquire', e.elapsed, e.resources, {
        'redlock.outcome': 'acquired',
        'redlock.attempts': e.attempts,
        'redlock.resource_count': e.resources.length,
        'redlock.fencing': e.fencingToken !== undefined,
        ...kindOf(e),
      });
    }),
    source.on('busy', (e) => {
      busy?.add(1);
      waited?.record(e.waited, { 'redlock.outcome': 'busy', ...kindOf(e) });
      span('redlock.acquire', e.waited, e.resources, {
        'redlock.outcome': 'busy',
        'redlock.attempts': e.attempts,
        'redlock.resource_count': e.resources.length,
        ...kindOf(e),
      });
    }),
    source.on('unavailable', (e) => {
      unavailable?.add(1);
      waited?.record(e.waited, { 'redlock.outcome': 'unavailable', ...kindOf(e) });
      span(
        'redlock.acquire',
        e.waited,
        e.resources,
        {
          'redlock.outcome': 'unavailable',
          'redlock.attempts': e.attempts,
          'redlock.resource_count': e.resources.length,
          ...kindOf(e),
        },
        'too few Redis nodes could take the lock',
      );
    }),
    source.on('extended', (e) => {
      span('redlock.extend', e.elapsed, e.resources, { 'redlock.outcome': 'extended' });
    }),
    source.on('released', (e) => {
      held?.record(e.heldFor);
      span('redlock.release', e.elapsed, e.resources, { 'redlock.released_on': e.releasedOn });
    }),
    source.on('lost', () => lost?.add(1)),
    source.on('revoked', () => revoked?.add(1)),
    source.on('node-error', (e) =>
      nodeErrors?.add(1, { 'redlock.node': e.node, 'redlock.operation': e.operation }),
    ),
  ];
}

/**
 * Gauges read from the instance's stats when the SDK collects: locks held, callers waiting, the longest fair
 * queue, renewals failed so far — per instance, never per resource (low cardinality). Returns what removes them.
 */
function observeStats(meter: MeterLike | undefined, stats: RedlockEventSource['stats']): () => void {
  if (!meter?.createObservableGauge || !stats) return () => undefined;
  const gauges: [ObservableLike, (result: ObservableResultLike) => void][] = [
    [
      meter.createObservableGauge('redlock.locks.held', { description: 'Locks this instance holds now' }),
      (result) => observeByTemplate(result, stats.held, stats.heldByTemplate),
    ],
    [
      meter.createObservableGauge('redlock.acquire.waiting', {
        description: 'Callers waiting in an acquisition of this instance now',
      }),
      (result) => observeByTemplate(result, stats.waiting, stats.waitingByTemplate),
    ],
    [
      meter.createObservableGauge('redlock.acquire.queue', {
        description: 'Fair waiting: the longest queue (across the fleet) a caller of this instance waits in',
      }),
      (result) => observeByTemplate(result, 0, stats.queuedByTemplate),
    ],
    [
      meter.createObservableGauge('redlock.renewals.failed', {
        description: 'Renewals of held locks that failed since the instance started',
      }),
      (result) => result.observe(stats.renewalsFailed),
    ],
  ];
  for (const [gauge, callback] of gauges) gauge.addCallback(callback);
  return () => {
    for (const [gauge, callback] of gauges) gauge.removeCallback(callback);
  };
}

/**
 * One series per `@Locked` template (`redlock.template`; direct calls without the attribute), so a dashboard
 * sees which methods hold or wait for locks; the total alone where the source does not count by template.
 */
function observeByTemplate(
  result: ObservableResultLike,
  total: number,
  byTemplate: ReadonlyMap<string, number> | undefined,
): void {
  if (!byTemplate || byTemplate.size === 0) return result.observe(byTemplate ? 0 : total);
  for (const [template, count] of byTemplate) {
    if (template === '') result.observe(count);
    else result.observe(count, { [TEMPLATE_ATTRIBUTE]: template });
  }
}

/** The attribute of the gauges' series: a `@Locked` key template (`'order:<0>'`), never a rendered resource. */
const TEMPLATE_ATTRIBUTE = 'redlock.template';

interface OpenTelemetryApi {
  trace: { getTracer(name: string): TracerLike };
  metrics: { getMeter(name: string): MeterLike };
}

let api: OpenTelemetryApi | null | undefined;

/** `@opentelemetry/api` (an optional peer): required when no tracer or meter is given. */
function requiredApi(): OpenTelemetryApi {
  if (api === undefined) {
    try {
      api = require('@opentelemetry/api') as OpenTelemetryApi;
    } catch {
      api = null;
    }
  }
  if (!api) {
    throw new InvalidArgumentError(
      'instrumentRedlock() records through @opentelemetry/api, which is not installed: npm install ' +
        '@opentelemetry/api (and an OpenTelemetry SDK), or pass { tracer, meter } yourself.',
    );
  }
  return api;
}

/** `redlock.mode` (read or write) and, for a semaphore, `redlock.permits`: low-cardinality attributes. */
function kindOf(event: { mode?: 'read' | 'write'; permits?: number }): Record<string, string | number> {
  const kind: Record<string, string | number> = { 'redlock.mode': event.mode ?? 'write' };
  if (event.permits !== undefined) kind['redlock.permits'] = event.permits;
  return kind;
}
