import type { IRequest } from "itty-router";
import { fail, type Outcome } from "../contract/errors";
import type { Caller } from "../contract/session";
import { authenticate, isFailure, type TokenSettings } from "./auth";
import { failure, json } from "./respond";

export type Authed = (request: IRequest, env: Env, caller: Caller) => Promise<Response>;
type Handler = (request: IRequest, env: Env, ctx: ExecutionContext) => Promise<Response>;

/**
 * Wraps a handler with bearer authentication. `admin` routes refuse session tokens (403);
 * `deployment` routes (the provider registry, shared by every tenant) also refuse tenant admins.
 * Session tokens are rate limited per token (admins are the operators and exempt); a refused
 * request stores nothing.
 */
export function authed(handler: Authed, admin: boolean | "deployment" = false): Handler {
  return async (request, env) => {
    const caller = await authenticate(request, env as Env & TokenSettings);
    if (isFailure(caller)) return failure(caller);
    if (admin && caller.kind !== "admin")
      return failure(fail("UNAUTHORIZED", "this route needs the admin token"));
    if (admin === "deployment" && caller.kind === "admin" && caller.tenant !== undefined) {
      return failure(fail("UNAUTHORIZED", "this route needs the deployment's admin token"));
    }
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
