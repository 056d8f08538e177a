/** A positive integer from a deployment var; absent, malformed, zero or negative: `fallback`. */
export function positiveInt(raw: string | undefined, fallback: number): number {
  const n = Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}
