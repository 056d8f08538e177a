import type { IRequest } from "itty-router";
import { fail, type Outcome } from "../contract/errors";
import type { Caller } from "../contract/session";
import { authenticate, isFailure, type TokenSettings } from "./auth";
import { failure, json } from "../contract/respond";
import { sessionStub } from "../platform/stubs";

export type Authed = (request: IRequest, env: Env, caller: Caller) => Promise<Response>;
type Handler = (request: IRequest, env: Env, ctx: ExecutionContext) => Promise<Response>;

/**
 * Who a route admits: `session` routes act on a session whose object checks the token itself;
 * `any` routes (the provider list) take any valid token, so a session token is checked first;
 * `admin` routes refuse session tokens (403) and `deployment` routes (the provider registry,
 * shared by every tenant) also refuse tenant admins.
 */
export type Audience = "session" | "any" | "admin" | "deployment";

/**
 * Wraps a handler with bearer authentication. Session tokens are rate limited per token (admins
 * are the operators and exempt); a refused request stores nothing.
 */
export function authed(handler: Authed, audience: Audience = "session"): Handler {
  return async (request, env) => {
    const caller = await authenticate(request, env as Env & TokenSettings);
    if (isFailure(caller)) return failure(caller);
    if (caller.kind === "session") {
      if (env.SESSION_RATE_LIMIT) {
        const { success } = await env.SESSION_RATE_LIMIT.limit({ key: caller.tokenHash });
        if (!success)
          return failure(fail("RATE_LIMITED", "too many requests for this token; retry in a minute"));
      }
      if (audience !== "session") {
        // no session object checks this token on the way: ask the session it claims to be
        const known = await sessionStub(env, caller.sessionId).describe(caller);
        if (!known.ok) return failure(fail("UNAUTHENTICATED", "the token is not valid"));
        if (audience !== "any") return failure(fail("UNAUTHORIZED", "this route needs the admin token"));
      }
    } else if (audience === "deployment" && caller.tenant !== undefined) {
      return failure(fail("UNAUTHORIZED", "this route needs the deployment's admin token"));
    }
    return handler(request, env, caller);
  };
}

export function reply<T>(outcome: Outcome<T>, status = 200): Response {
  return outcome.ok ? json(outcome.value, status) : failure(outcome);
}
