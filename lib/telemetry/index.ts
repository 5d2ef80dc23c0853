/** Metrics and tracing from the typed events: OpenTelemetry (an optional peer). */
export { instrumentRedlock } from './opentelemetry';
export type {
  MeterLike,
  ObservableLike,
  RedlockEventSource,
  RedlockTelemetryOptions,
  SpanLike,
  TracerLike,
} from './opentelemetry';
