import type { IRequest } from "itty-router";
import { CreateScheduleBody } from "../contract/control";
import { type Failure, fail } from "../contract/errors";
import { failure } from "../contract/respond";
import { lazySchema } from "../contract/lazy";
import * as R from "../contract/responses";
import { compact } from "../core/compact";
import { sessionStub } from "../platform/stubs";
import { authed, reply } from "./authed";
import { queryOf, readBody, validate } from "./body";
import { TraceQuery } from "../contract/wire";
import { parseTraceCursor } from "../trace/trace-cursor";
import { sessionIdParam } from "./path-params";
import type { Route } from "./route";

/** A schedule id as the runtime makes them (`sch_` and a UUID, or 16 hex digits for a model's). */
const SCHEDULE_ID = /^sch_(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16})$/;

/** One schedule as `GET …/schedules/:scheduleId` answers it: an entry of the listing. */
const ScheduleView = lazySchema(() => R.ScheduleList.shape.schedules.element);

/** The schedule id a route's path names (`:scheduleId`), or `404 NOT_FOUND`. */
function scheduleIdParam(request: IRequest): string | Failure {
  const id = request.params.scheduleId ?? "";
  return SCHEDULE_ID.test(id) ? id : fail("NOT_FOUND", "schedule not found");
}

/** Control over time (docs/api.md): a session's schedules, the end of a session, and its trace. */
export function controlRoutes(): Route[] {
  return [
    {
      method: "delete",
      path: "/v1/sessions/{id}",
      // a top-level session by an admin, a descendant by its tree's token too (core/access.ts)
      summary:
        "Delete the session and its whole tree: every member answers 404 from this answer on, stops its work and erases its storage (a top-level session: an admin only)",
      auth: "session",
      ok: [202, "accepted", R.AcceptedFlag],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        return reply(await sessionStub(env, id).deleteTree(caller), 202);
      }),
    },
    {
      method: "get",
      path: "/v1/sessions/{id}/trace",
      // the spans of the session and its local descendants, as OTLP/HTTP JSON in pages of at most
      // 4 MiB: `next` names the following page (README "Traces")
      summary:
        "The spans of the session and its local descendants (invoke_agent per turn, chat per model step, execute_tool per tool call) as OTLP/HTTP JSON, a page of at most 4 MiB: `next`, when more spans follow, is the `cursor` of the next page (400 INVALID_REQUEST for a cursor no page gave)",
      auth: "session",
      query: TraceQuery,
      ok: [200, "the trace", R.Trace],
      handle: authed(async (request, env, caller) => {
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
    },
    {
      method: "post",
      path: "/v1/sessions/{id}/schedules",
      summary:
        "Deliver `content` as a message at every time of a five-field cron expression in `timezone` (default UTC); each firing time once, a missed period once",
      auth: "session",
      body: CreateScheduleBody,
      ok: [201, "the schedule and its first firing time", R.ScheduleCreated],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        const body = await readBody(request, CreateScheduleBody);
        if (!body.ok) return failure(body);
        return reply(await sessionStub(env, id).createSchedule(caller, compact(body.value)), 201);
      }),
    },
    {
      method: "get",
      path: "/v1/sessions/{id}/schedules",
      summary:
        'The session\'s recurring schedules (`"kind": "cron"`) and messages held for their time (`"kind": "message"`: `notBefore`, `schedule_message` with a delay), oldest first; a token of its tree above it may read them too',
      auth: "session",
      ok: [200, "the schedules", R.ScheduleList],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        return reply(await sessionStub(env, id).schedules(caller));
      }),
    },
    {
      method: "get",
      path: "/v1/sessions/{id}/schedules/{scheduleId}",
      summary:
        "One recurring schedule or held message of the session, as the listing shows it (404 once it is deleted, or a held message once delivered)",
      auth: "session",
      ok: [200, "the schedule", ScheduleView],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        const scheduleId = scheduleIdParam(request);
        if (typeof scheduleId !== "string") return failure(scheduleId);
        return reply(await sessionStub(env, id).schedule(caller, scheduleId));
      }),
    },
    {
      method: "delete",
      path: "/v1/sessions/{id}/schedules/{scheduleId}",
      summary:
        "Delete a recurring schedule, or a held message before its time (it never enters the inbox); the session's own token, an admin, or a token of its tree above it",
      auth: "session",
      ok: [204, "deleted"],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        const scheduleId = scheduleIdParam(request);
        if (typeof scheduleId !== "string") return failure(scheduleId);
        const removed = await sessionStub(env, id).deleteSchedule(caller, scheduleId);
        return removed.ok ? new Response(null, { status: 204 }) : failure(removed);
      }),
    },
  ];
}
