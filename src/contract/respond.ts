import { ERROR_STATUS, type Failure } from "./errors";

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/**
 * Seconds a client should wait before retrying a `429` or `503`: a rate limit's window is a
 * minute; an overloaded object or an unreachable parent is usually back within a second.
 */
const RETRY_AFTER_SECONDS: Partial<Record<Failure["code"], number>> = {
  RATE_LIMITED: 60,
  OVERLOADED: 1,
  PARENT_UNAVAILABLE: 1,
};

/**
 * The error envelope: `{"error": {"code", "message", "issues"?}}` with the code's status, and
 * `Retry-After` on every `429` and `503`.
 */
export function failure(f: Failure): Response {
  const error: Record<string, unknown> = { code: f.code, message: f.message };
  if (f.issues !== undefined) error.issues = f.issues;
  const status = ERROR_STATUS[f.code];
  const headers: Record<string, string> =
    f.code === "UNAUTHENTICATED" ? { "www-authenticate": "Bearer" } : {};
  if (status === 429 || status === 503) headers["retry-after"] = String(RETRY_AFTER_SECONDS[f.code] ?? 1);
  return json({ error }, status, headers);
}
