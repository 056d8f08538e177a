import { type Failure, fail } from "../contract/errors";
import { isSessionId } from "../contract/ids";
import type { Caller } from "../contract/session";
import { sha256Hex } from "../core/hash";

/**
 * Bearer authentication. The admin token comes from the deployment's `ADMIN_TOKEN` secret. A
 * session token is `<sessionId>.<secret>`: the Worker learns which session it claims, and that
 * session's object checks the stored hash (tokens are never stored in clear).
 */

const PROTOCOL_PREFIX = "bearer.";

export function tokenOf(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  if (header) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match?.[1];
  }
  // Browsers cannot set headers on a WebSocket: the token may come as a subprotocol.
  const protocols = request.headers.get("sec-websocket-protocol");
  const offered = protocols?.split(",").map((p) => p.trim()) ?? [];
  return offered.find((p) => p.startsWith(PROTOCOL_PREFIX))?.slice(PROTOCOL_PREFIX.length);
}

export async function authenticate(
  request: Request,
  adminToken: string | undefined,
): Promise<Caller | Failure> {
  const token = tokenOf(request);
  if (!token) return fail("UNAUTHENTICATED", "missing bearer token");
  if (adminToken && (await sameSecret(token, adminToken))) return { kind: "admin" };
  const dot = token.indexOf(".");
  const sessionId = dot > 0 ? token.slice(0, dot) : "";
  if (!isSessionId(sessionId) || token.length - dot < 16)
    return fail("UNAUTHENTICATED", "the token is not valid");
  return { kind: "session", sessionId, tokenHash: await sha256Hex(token) };
}

export function isFailure(value: Caller | Failure): value is Failure {
  return "ok" in value && value.ok === false;
}

export function newSessionToken(sessionId: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const secret = btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
  return `${sessionId}.${secret}`;
}

/** Compares two secrets in time independent of where they differ (hashing equalizes lengths). */
async function sameSecret(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([sha256Hex(a), sha256Hex(b)]);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x.charCodeAt(i) ^ y.charCodeAt(i);
  return diff === 0;
}
