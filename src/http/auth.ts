import { type Failure, fail } from "../contract/errors";
import { isSessionId } from "../contract/ids";
import type { Caller } from "../contract/session";
import { sameSecret } from "../core/access";
import { sha256Hex } from "../core/hash";

/**
 * Bearer authentication. The admin token comes from the deployment's `ADMIN_TOKEN` secret. A
 * session token is `<sessionId>.<secret>`: the Worker learns which session it claims, and that
 * session's object checks the stored hash (tokens are never stored in clear).
 *
 * Every invalid token gets the same answer, `INVALID_TOKEN` (401; on a deployment without an
 * ADMIN_TOKEN, `INVALID_TOKEN_NO_ADMIN`, which says so), and counts as a failed authentication
 * (`refused`): past the limit, failures answer 429 instead.
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

export interface TokenSettings {
  ADMIN_TOKEN?: string | undefined;
  /** JSON object mapping further admin tokens to tenant ids, e.g. {"<token>": "acme"}. */
  TENANT_TOKENS?: string | undefined;
  /** Also counts failed authentications, under keys of their own (`refused`); absent: no limit. */
  SESSION_RATE_LIMIT?: RateLimit | undefined;
}

/** The one answer to an invalid token, whatever made it invalid and whatever exists. */
export const INVALID_TOKEN = "the token is not valid";

/**
 * The same refusal on a deployment with no ADMIN_TOKEN, where no admin token can ever work: it
 * says so, and how to set one (a fact of the deployment, the same for every token presented).
 */
export const INVALID_TOKEN_NO_ADMIN =
  "the token is not valid, and this deployment has no ADMIN_TOKEN, so no admin token is accepted: " +
  "set one with `wrangler secret put ADMIN_TOKEN` (locally: ADMIN_TOKEN in .dev.vars), at least 16 characters";

/**
 * One SHA-256 per request: the presented token's hash is compared (in constant time) with the
 * admin and tenant tokens' hashes, computed once per isolate, and is what session objects check.
 * A token that is neither an admin token nor shaped like a session token is refused here, and
 * counted under the session it names or else its hash; a correct admin token is never counted.
 */
export async function authenticate(request: Request, settings: TokenSettings): Promise<Caller | Failure> {
  const token = tokenOf(request);
  if (!token) return fail("UNAUTHENTICATED", "missing bearer token");
  const tokenHash = await sha256Hex(token);
  for (const admin of await adminHashes(settings)) {
    if (sameSecret(tokenHash, admin.hash))
      return admin.tenant === undefined ? { kind: "admin" } : { kind: "admin", tenant: admin.tenant };
  }
  const dot = token.indexOf(".");
  const named = dot > 0 ? token.slice(0, dot) : "";
  const sessionId = isSessionId(named) ? named : undefined;
  if (sessionId === undefined || token.length - dot < 16) return refused(settings, sessionId ?? tokenHash);
  return { kind: "session", sessionId, tokenHash };
}

/**
 * A failed authentication, counted under `key` (the session the token names, or the token's hash;
 * never the client's address) in a key space of its own of the SESSION_RATE_LIMIT binding: 401
 * `INVALID_TOKEN`, or 429 past the limit. Only failures are counted, so no one's failures can
 * refuse a correct token (no lockout of a session's owner or an admin).
 */
export async function refused(settings: TokenSettings, key: string): Promise<Failure> {
  const limiter = settings.SESSION_RATE_LIMIT;
  if (limiter) {
    const { success } = await limiter.limit({ key: `auth-failed:${key}` });
    if (!success) return fail("RATE_LIMITED", "too many failed authentications; retry in a minute");
  }
  return fail("UNAUTHENTICATED", settings.ADMIN_TOKEN ? INVALID_TOKEN : INVALID_TOKEN_NO_ADMIN);
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

let adminCache: { key: string; hashes: { hash: string; tenant?: string }[] } | undefined;

/** The hashes of the admin token (tenant `default`) and the tenant tokens, once per isolate. */
async function adminHashes(settings: TokenSettings): Promise<{ hash: string; tenant?: string }[]> {
  const key = `${settings.ADMIN_TOKEN ?? ""}\u0000${settings.TENANT_TOKENS ?? ""}`;
  if (adminCache?.key === key) return adminCache.hashes;
  const hashes: { hash: string; tenant?: string }[] = [];
  if (settings.ADMIN_TOKEN) hashes.push({ hash: await sha256Hex(settings.ADMIN_TOKEN) });
  for (const [token, tenant] of tenantTokens(settings.TENANT_TOKENS))
    hashes.push({ hash: await sha256Hex(token), tenant });
  adminCache = { key, hashes };
  return hashes;
}

let parsedTenants: { raw: string; entries: [string, string][] } | undefined;

/** The tenant admin tokens, parsed once per isolate; a malformed setting grants nothing. */
function tenantTokens(raw: string | undefined): [string, string][] {
  if (!raw) return [];
  if (parsedTenants?.raw === raw) return parsedTenants.entries;
  let entries: [string, string][] = [];
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      entries = Object.entries(value).filter(
        (e): e is [string, string] =>
          typeof e[1] === "string" && e[0].length >= 16 && /^[a-z0-9-]{1,64}$/.test(e[1]),
      );
    }
  } catch {
    console.error("TENANT_TOKENS is not valid JSON; no tenant admin tokens are active");
  }
  parsedTenants = { raw, entries };
  return entries;
}
