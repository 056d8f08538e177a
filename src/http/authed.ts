import type { IRequest } from "itty-router";
import { fail, type Outcome } from "../contract/errors";
import type { Caller } from "../contract/session";
import { authenticate, isFailure, refused, type TokenSettings } from "./auth";
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
 *
 * An invalid token is 401 whether or not the session it names, or the session it asks about,
 * exists: a session object answers 401 for a wrong secret of itself or an ancestor but 404 for
 * anything else, so a 404 to a session token is checked with the token's own session, and turned
 * into the one 401 when the token is not valid there either. A valid token keeps its 404. Every
 * such failure is counted under the session the token names (auth.ts, `refused`).
 */
export function authed(handler: Authed, audience: Audience = "session"): Handler {
  return async (request, env) => {
    const settings = env as Env & TokenSettings;
    const caller = await authenticate(request, settings);
    if (isFailure(caller)) return failure(caller);
    if (caller.kind === "admin") {
      if (audience === "deployment" && caller.tenant !== undefined)
        return failure(fail("UNAUTHORIZED", "this route needs the deployment's admin token"));
      return handler(request, env, caller);
    }
    if (env.SESSION_RATE_LIMIT) {
      const { success } = await env.SESSION_RATE_LIMIT.limit({ key: caller.tokenHash });
      if (!success)
        return failure(fail("RATE_LIMITED", "too many requests for this token; retry in a minute"));
    }
    if (audience !== "session") {
      // no session object checks this token on the way: ask the session it claims to be
      if (!(await validToken(env, caller))) return failure(await refused(settings, caller.sessionId));
      if (audience !== "any") return failure(fail("UNAUTHORIZED", "this route needs the admin token"));
      return handler(request, env, caller);
    }
    const response = await handler(request, env, caller);
    const invalid = response.status === 401 || (response.status === 404 && !(await validToken(env, caller)));
    if (!invalid) return response;
    await response.body?.cancel();
    return failure(await refused(settings, caller.sessionId));
  };
}

/** Whether a session token is valid for the session it names (which may not exist). */
async function validToken(env: Env, caller: Caller & { kind: "session" }): Promise<boolean> {
  return (await sessionStub(env, caller.sessionId).describe(caller)).ok;
}

export function reply<T>(outcome: Outcome<T>, status = 200): Response {
  return outcome.ok ? json(outcome.value, status) : failure(outcome);
}
