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
    return handler(request, env, caller);
  };
}

export function reply<T>(outcome: Outcome<T>, status = 200): Response {
  return outcome.ok ? json(outcome.value, status) : failure(outcome);
}
