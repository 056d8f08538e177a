import { type Failure, fail } from "../contract/errors";
import { type Caller, type SessionHeader, tenantOf } from "../contract/session";

/**
 * Who may do what to a session. The admin may do everything. A session token acts as its own
 * session and reads its descendants. A token that claims this session or one of its ancestors
 * but does not match is a wrong token (401); any other token learns nothing (404).
 */
export type Need = "read" | "act";

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
  if (header.tokenHash === null || header.tokenHash !== caller.tokenHash) {
    return fail("UNAUTHENTICATED", "the token is not valid");
  }
  if (need === "act" && !own) return fail("UNAUTHORIZED", "a session token may only read its descendants");
  return undefined;
}
