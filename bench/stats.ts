// Pure statistics used by every workload: percentiles, latency summaries, rates and ratios.
// Kept free of I/O so test/bench/stats.test.ts can check the arithmetic the report rests on.

/** Summary of a latency sample in milliseconds. */
export interface LatencySummary {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export class StatsError extends Error {
  readonly code = 'BENCH_STATS';
}

/**
 * Nearest-rank percentile: the smallest sample such that at least p% of the samples are <= it.
 * `sorted` must be ascending. p = 0 gives the minimum, p = 100 the maximum; an empty sample gives NaN.
 */
export function percentileSorted(sorted: ArrayLike<number>, p: number): number {
  if (!(p >= 0 && p <= 100)) throw new StatsError(`percentile ${p} is outside [0, 100]`);
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  if (p === 0) return sorted[0];
  const rank = Math.ceil((p / 100) * n);
  return sorted[Math.min(n, Math.max(1, rank)) - 1];
}

/** Percentile of an unsorted sample (copied and sorted; the input is left alone). */
export function percentile(samples: ArrayLike<number>, p: number): number {
  return percentileSorted(Float64Array.from(samples).sort(), p);
}

export function summarize(samples: ArrayLike<number>): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  const n = sorted.length;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i];
  return {
    count: n,
    min: n ? sorted[0] : Number.NaN,
    mean: n ? sum / n : Number.NaN,
    p50: percentileSorted(sorted, 50),
    p90: percentileSorted(sorted, 90),
    p99: percentileSorted(sorted, 99),
    max: n ? sorted[n - 1] : Number.NaN,
  };
}

/** Median of the finite values (mean of the middle two for an even count); undefined when none. */
export function median(xs: number[]): number | undefined {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return undefined;
  const m = v.length >> 1;
  return v.length % 2 === 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** Events per second over an interval in milliseconds; NaN when the interval is not positive. */
export function ratePerSecond(count: number, elapsedMs: number): number {
  return elapsedMs > 0 ? (count * 1000) / elapsedMs : Number.NaN;
}

/** a / b for the report's noded/Hardhat column; NaN when either side is missing or b is 0. */
export function ratio(a: number | undefined, b: number | undefined): number {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) {
    return Number.NaN;
  }
  return a / b;
}
