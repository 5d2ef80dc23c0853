import type { Metric } from '../scenarios';

/** A figure with its unit, rounded for reading: `0.412 ms`, `12,345 /s`, `1.21×`, `0.35 MB`, `2,650 B`. */
export function formatValue(value: number, unit: string): string {
  if (value === undefined || Number.isNaN(value)) return '—';
  if (!Number.isFinite(value)) return value > 0 ? '∞' : '−∞';
  switch (unit) {
    case 'ms':
      return `${value < 10 ? value.toFixed(3) : value < 100 ? value.toFixed(1) : Math.round(value)} ms`;
    case 'µs':
      return `${Math.round(value).toLocaleString('en-US')} µs`;
    case '/s':
      return `${Math.round(value).toLocaleString('en-US')} /s`;
    case '×':
      return `${value.toFixed(2)}×`;
    case 'MB':
      return `${value.toFixed(2)} MB`;
    case 'KB':
      return `${value.toFixed(2)} KB`;
    case 'µs/s':
      return `${value.toFixed(2)} µs/s`;
    case 'index':
      return value.toFixed(3);
    case '%':
      return `${value.toFixed(1)} %`;
    case 'B':
      return `${Math.round(value).toLocaleString('en-US')} B`;
    default:
      return Number.isInteger(value) ? value.toLocaleString('en-US') : value.toFixed(1);
  }
}

/** Whether a ratio to the baseline means something for this metric (not for counts or ratios). */
export function hasRatio(metric: Metric): boolean {
  return metric.ratio !== false && metric.unit !== '' && metric.unit !== '×' && metric.better !== 'none';
}

/** `value / baseline`, or undefined when the baseline cannot divide. */
export function ratio(value: number, baseline: number): number | undefined {
  if (!Number.isFinite(value) || !Number.isFinite(baseline) || value < 0 || baseline <= 0) return undefined;
  return value / baseline;
}
