import { fingerprint } from "./hash";

/**
 * The identity of a start request, for telling a retry of the same start from a different request
 * that reuses its child id: a fingerprint of the request's JSON with its object keys sorted, so
 * the order in which a caller wrote the fields does not matter. The span the start came under
 * (`trace`, contract/trace.ts `Traced`) is not part of it: a retry may come under another span.
 */
export function requestKey(request: object): string {
  const { trace: _span, ...asked } = request as { trace?: unknown };
  return fingerprint(stableJson(asked));
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
