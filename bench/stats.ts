/** Small statistics helpers: percentiles over samples, the median across rounds. */

/** The p-th percentile (0–100) by nearest rank; NaN for no samples. Does not modify `samples`. */
export function percentile(samples: ArrayLike<number>, p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = Float64Array.from(samples).sort();
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export function median(values: readonly number[]): number {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return NaN;
  const sorted = [...finite].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Per metric, the median of its values over the rounds. */
export function medianOfRounds(rounds: readonly Record<string, number>[]): Record<string, number> {
  const keys = new Set(rounds.flatMap((round) => Object.keys(round)));
  const out: Record<string, number> = {};
  for (const key of keys) out[key] = median(rounds.map((round) => round[key] ?? NaN));
  return out;
}

/** A growable array of latency samples in ms, stored unboxed. */
export class Samples {
  private data: Float64Array;
  private size = 0;

  constructor(capacity = 1024) {
    this.data = new Float64Array(capacity);
  }

  push(value: number): void {
    if (this.size === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.size++] = value;
  }

  get length(): number {
    return this.size;
  }

  values(): Float64Array {
    return this.data.subarray(0, this.size);
  }

  p(p: number): number {
    return percentile(this.values(), p);
  }
}
