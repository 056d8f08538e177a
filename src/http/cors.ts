import { fail } from "../contract/errors";
import { failure } from "../contract/respond";

/**
 * CORS for browser apps on other origins: `CORS_ORIGINS` is a comma-separated list of origins
 * (`https://app.example.com`); none by default. A preflight from a listed origin is answered; one
 * from any other origin is refused `403` (no CORS headers) on every path, the dashboard's and paths
 * outside the base path included, whether or not any origin is listed. Responses to listed origins carry
 * `Access-Control-Allow-Origin` for that origin (never `*`, since requests carry tokens).
 */

const ALLOWED_METHODS = "GET, POST, PUT, DELETE, OPTIONS";
const ALLOWED_HEADERS =
  "authorization, content-type, idempotency-key, last-event-id, mcp-protocol-version, mcp-session-id";
const EXPOSED_HEADERS = "retry-after, www-authenticate, mcp-session-id";

export function corsOrigins(raw: string | undefined): ReadonlySet<string> {
  return new Set(
    (raw ?? "")
      .split(",")
      .map((o) => o.trim().replace(/\/+$/, ""))
      .filter((o) => o.length > 0),
  );
}

/** The preflight's answer, or undefined when `request` is not a preflight. */
export function preflight(request: Request, allowed: ReadonlySet<string>): Response | undefined {
  if (request.method !== "OPTIONS" || !request.headers.has("access-control-request-method")) return undefined;
  const origin = request.headers.get("origin");
  if (origin === null || !allowed.has(origin))
    return failure(fail("UNAUTHORIZED", "this origin may not call the API (CORS_ORIGINS)"));
  return new Response(null, {
    status: 204,
    headers: {
      "access-control-allow-origin": origin,
      "access-control-allow-methods": ALLOWED_METHODS,
      "access-control-allow-headers": ALLOWED_HEADERS,
      "access-control-max-age": "600",
      vary: "Origin",
    },
  });
}

/** `response` with the CORS headers of a listed origin (unchanged for others and for upgrades). */
export function withCors(request: Request, response: Response, allowed: ReadonlySet<string>): Response {
  const origin = request.headers.get("origin");
  if (origin === null || !allowed.has(origin) || response.status === 101) return response;
  const headers = new Headers(response.headers);
  headers.set("access-control-allow-origin", origin);
  headers.set("access-control-expose-headers", EXPOSED_HEADERS);
  headers.append("vary", "Origin");
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}
