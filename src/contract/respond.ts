import { ERROR_STATUS, type Failure } from "./errors";

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/** The error envelope: `{"error": {"code", "message", "issues"?}}` with the code's status. */
export function failure(f: Failure): Response {
  const error: Record<string, unknown> = { code: f.code, message: f.message };
  if (f.issues !== undefined) error.issues = f.issues;
  const headers: Record<string, string> =
    f.code === "UNAUTHENTICATED" ? { "www-authenticate": "Bearer" } : {};
  return json({ error }, ERROR_STATUS[f.code], headers);
}
