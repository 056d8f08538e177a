import type { IRequest } from "itty-router";
import { type Failure, fail } from "../contract/errors";
import { isSessionId } from "../contract/ids";

/**
 * The session id a route's path names (`:id`), or `404 NOT_FOUND` with `missing` as its message
 * (a run's route says "run not found"): an id that is not a session id names no session, and no
 * object is asked about it.
 */
export function sessionIdParam(request: IRequest, missing = "session not found"): string | Failure {
  const id = request.params.id ?? "";
  return isSessionId(id) ? id : fail("NOT_FOUND", missing);
}

/** The approval id a route's path names (`:approvalId`, a UUID), or `404 NOT_FOUND`. */
export function approvalIdParam(request: IRequest): string | Failure {
  const id = request.params.approvalId ?? "";
  return isSessionId(id) ? id : fail("NOT_FOUND", "approval not found");
}
