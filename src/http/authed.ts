import type { IRequest } from "itty-router";
import { fail, type Outcome } from "../contract/errors";
import type { Caller } from "../contract/session";
import { authenticate, isFailure } from "./auth";
import { failure, json } from "./respond";

export type Authed = (request: IRequest, env: Env, caller: Caller) => Promise<Response>;
type Handler = (request: IRequest, env: Env, ctx: ExecutionContext) => Promise<Response>;

/** Wraps a handler with bearer authentication; `admin` routes refuse session tokens (403). */
export function authed(handler: Authed, admin = false): Handler {
  return async (request, env) => {
    const caller = await authenticate(request, env.ADMIN_TOKEN);
    if (isFailure(caller)) return failure(caller);
    if (admin && caller.kind !== "admin")
      return failure(fail("UNAUTHORIZED", "this route needs the admin token"));
    // Session tokens are rate limited per token (the admin token is the operator's and exempt);
    // a refused request stores nothing.
    if (caller.kind === "session" && env.SESSION_RATE_LIMIT) {
      const { success } = await env.SESSION_RATE_LIMIT.limit({ key: caller.tokenHash });
      if (!success)
        return failure(fail("RATE_LIMITED", "too many requests for this token; retry in a minute"));
    }
    return handler(request, env, caller);
  };
}

export function reply<T>(outcome: Outcome<T>, status = 200): Response {
  return outcome.ok ? json(outcome.value, status) : failure(outcome);
}
