import type { IRequest, RouterType } from "itty-router";
import { CreateScheduleBody } from "../contract/control";
import { type Failure, fail } from "../contract/errors";
import { failure } from "../contract/respond";
import { compact } from "../core/compact";
import { sessionStub } from "../platform/stubs";
import { authed, reply } from "./authed";
import { queryOf, readBody, validate } from "./body";
import { TraceQuery } from "../contract/wire";
import { parseTraceCursor } from "../trace/trace-cursor";
import { sessionIdParam } from "./path-params";

/** A schedule id as the runtime makes them (`sch_` and a UUID, or 16 hex digits for a model's). */
const SCHEDULE_ID = /^sch_(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16})$/;

/** The schedule id a route's path names (`:scheduleId`), or `404 NOT_FOUND`. */
function scheduleIdParam(request: IRequest): string | Failure {
  const id = request.params.scheduleId ?? "";
  return SCHEDULE_ID.test(id) ? id : fail("NOT_FOUND", "schedule not found");
}

/** Control over time (docs/api.md): a session's schedules, the end of a session, and its trace. */
export function addControlRoutes(router: RouterType<IRequest, [Env, ExecutionContext]>): void {
  // a top-level session by an admin, a descendant by its tree's token too (core/access.ts)
  router.delete(
    "/v1/sessions/:id",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      return reply(await sessionStub(env, id).deleteTree(caller), 202);
    }),
  );

  // the spans of the session and its local descendants, as OTLP/HTTP JSON in pages of at most
  // 4 MiB: `next` names the following page (README "Traces")
  router.get(
    "/v1/sessions/:id/trace",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      const query = validate(queryOf(request), TraceQuery);
      if (!query.ok) return failure(query);
      const { cursor } = query.value;
      const at = cursor === undefined ? undefined : parseTraceCursor(cursor);
      if (cursor !== undefined && at === undefined)
        return failure(fail("INVALID_REQUEST", "cursor: not a cursor from a previous page"));
      return reply(await sessionStub(env, id).otlpTrace(caller, at));
    }),
  );

  router.post(
    "/v1/sessions/:id/schedules",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      const body = await readBody(request, CreateScheduleBody);
      if (!body.ok) return failure(body);
      return reply(await sessionStub(env, id).createSchedule(caller, compact(body.value)), 201);
    }),
  );

  router.get(
    "/v1/sessions/:id/schedules",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      return reply(await sessionStub(env, id).schedules(caller));
    }),
  );

  router.delete(
    "/v1/sessions/:id/schedules/:scheduleId",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      const scheduleId = scheduleIdParam(request);
      if (typeof scheduleId !== "string") return failure(scheduleId);
      const removed = await sessionStub(env, id).deleteSchedule(caller, scheduleId);
      return removed.ok ? new Response(null, { status: 204 }) : failure(removed);
    }),
  );
}
