// Percentiles and loops with a bound on both count and time.

/** Nearest-rank percentile of a list of numbers (ms). */
export function percentile(samples, p) {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function summarize(samples) {
  return {
    n: samples.length,
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    max: samples.length ? Math.max(...samples) : Number.NaN,
  };
}

/**
 * Runs `once(i)` sequentially up to `count` times or until `budgetMs` has passed, and returns
 * the duration of each call in ms (performance.now() around the awaited call).
 */
export async function timeSequential(count, budgetMs, once) {
  const samples = [];
  const deadline = performance.now() + budgetMs;
  for (let i = 0; i < count && performance.now() < deadline; i++) {
    const t0 = performance.now();
    await once(i);
    samples.push(performance.now() - t0);
  }
  return samples;
}

/** Runs `task(i)` for i < count with at most `concurrency` in flight, stopping at the deadline. */
export async function pool(count, concurrency, deadline, task) {
  let next = 0;
  const worker = async () => {
    while (next < count && performance.now() < deadline) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return next;
}

export const ms = (x) =>
  Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) : "-";
export const ratio = (x, floor) => (Number.isFinite(x) && floor > 0 ? `${(x / floor).toFixed(2)}x` : "-");
