import { type Failure, fail } from "../contract/errors";
import { type Caller, type SessionHeader, tenantOf } from "../contract/session";

/**
 * Who may do what to a session. The admin may do everything. A session token acts as its own
 * session, and reads and oversees its descendants (`oversee`: what an ancestor may do for a
 * session below it: compact its model view, decide the approvals of its subtree). `delete`: a
 * top-level session by an admin only, a descendant by its tree's token too. A token that claims this session or one of its ancestors
 * but does not match is a wrong token (401); any other token learns nothing here (404). The Worker
 * (src/http/authed.ts) then asks the token's own session whether the token is valid at all, so an
 * invalid token is 401 whether or not the session it names or asks about exists.
 */
export type Need = "read" | "oversee" | "act" | "delete";

export function checkAccess(
  header: SessionHeader | undefined,
  caller: Caller,
  need: Need,
): Failure | undefined {
  if (header === undefined) return fail("NOT_FOUND", "session not found");
  if (caller.kind === "admin") {
    return tenantOf(caller) === tenantOf(header) ? undefined : fail("NOT_FOUND", "session not found");
  }
  const own = caller.sessionId === header.id;
  const ancestor = header.lineage.includes(caller.sessionId);
  if (!own && !ancestor) return fail("NOT_FOUND", "session not found");
  if (header.tokenHash === null || !sameSecret(header.tokenHash, caller.tokenHash)) {
    return fail("UNAUTHENTICATED", "the token is not valid");
  }
  if (need === "act" && !own) return fail("UNAUTHORIZED", "a session token may only read its descendants");
  if (need === "delete" && header.parentSession === null)
    return fail("UNAUTHORIZED", "a top-level session is deleted by an admin, not with its own token");
  return undefined;
}

/**
 * The one comparison of secrets (tokens, their hashes): true when `x` and `y` are the same string,
 * in time that depends on their lengths only, never on where they differ. Lengths are not secret
 * (hashes all have 64 hex digits). Every token or hash comparison of the runtime goes through it;
 * callback signatures are checked by WebCrypto's `verify`, which is constant-time itself.
 */
export function sameSecret(x: string, y: string): boolean {
  if (x.length !== y.length) return false;
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x.charCodeAt(i) ^ y.charCodeAt(i);
  return diff === 0;
}
