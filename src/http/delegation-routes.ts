import type { IRequest } from "itty-router";
import { type Failure, fail } from "../contract/errors";
import type { Caller } from "../contract/session";
import { type ProviderViewer, providersFor, registryEventsFor } from "../providers/provider-access";
import { StartSubagentBody } from "../contract/run";
import { ContinuableStartSchema, DrainBody, FollowupBody } from "../contract/continuable";
import { compact } from "../core/compact";
import { ProviderName, RegisterProviderBody } from "../providers/catalog";
import { forgetProviderLists } from "../providers/provider-lists";
import { type Authed, authed, reply } from "./authed";
import { queryOf, readBody, validate } from "./body";
import * as R from "../contract/responses";
import { failure, json } from "../contract/respond";
import { registryStub, sessionStub } from "../platform/stubs";
import * as z from "zod";
import { lazySchema } from "../contract/lazy";
import { EventsQuery } from "../contract/wire";
import { parseTraceparent } from "../trace/traceparent";
import { sessionIdParam } from "./path-params";
import type { Route } from "./route";

/** Who reads the registry: the deployment admin, a tenant's admin, or a session (its tenant and `providers`). */
async function viewerOf(env: Env, caller: Caller): Promise<ProviderViewer | Failure> {
  if (caller.kind === "admin")
    return caller.tenant === undefined ? { kind: "deployment" } : { kind: "scoped", tenant: caller.tenant };
  const scope = await sessionStub(env, caller.sessionId).providerScope(caller);
  return scope.ok ? { kind: "scoped", ...scope.value } : fail("UNAUTHENTICATED", "the token is not valid");
}

export const RunQuery = lazySchema(() =>
  z.strictObject({
    wait: z
      .string()
      .regex(/^\d{1,6}$/, "must be a non-negative integer")
      .transform(Number)
      .pipe(z.number().int().min(0).max(30_000))
      .default(0),
  }),
);

/** The session and run a run's route names, or `404 NOT_FOUND` "run not found" (for a bad session id too). */
function runParams(request: IRequest): { id: string; runId: string } | Failure {
  const id = sessionIdParam(request, "run not found");
  if (typeof id !== "string") return id;
  const runId = request.params.runId ?? "";
  return runId ? { id, runId } : fail("NOT_FOUND", "run not found");
}

/** Provider registry and delegation routes (docs/api.md). */
export function delegationRoutes(): Route[] {
  const putProvider: Authed = async (request, env) => {
    const name = ProviderName.safeParse(request.params.name);
    if (!name.success)
      return failure(fail("INVALID_REQUEST", name.error.issues[0]?.message ?? "bad provider name"));
    const body = await readBody(request, RegisterProviderBody);
    if (!body.ok) return failure(body);
    const registered = await registryStub(env).register({ name: name.data, ...compact(body.value) });
    forgetProviderLists();
    return reply(registered, 201);
  };
  return [
    {
      method: "get",
      path: "/v1/providers",
      // any valid token reads the registry, each as far as it may see it (provider-access.ts); the
      // session a session token names is asked for its scope, which also checks the token
      summary: "The providers",
      auth: "any",
      ok: [200, "providers", R.ProviderList],
      handle: authed(async (_request, env, caller) => {
        const viewer = await viewerOf(env, caller);
        if ("ok" in viewer) return failure(viewer);
        return json({ providers: providersFor(await registryStub(env).list(), viewer) });
      }),
    },
    {
      method: "get",
      path: "/v1/providers/events",
      summary: "The registry's add and remove events",
      auth: "any",
      query: EventsQuery,
      ok: [200, "a page", R.ProviderEventPage],
      handle: authed(async (request, env, caller) => {
        const query = validate(queryOf(request), EventsQuery);
        if (!query.ok) return failure(query);
        const viewer = await viewerOf(env, caller);
        if ("ok" in viewer) return failure(viewer);
        // the page is cut from the whole log, so `next` moves past events this viewer does not see
        const events = await registryStub(env).events(query.value.after, query.value.limit + 1);
        const page = events.slice(0, query.value.limit);
        return json({
          events: registryEventsFor(page, viewer),
          next: events.length > page.length ? (page.at(-1)?.seq ?? null) : null,
        });
      }),
    },
    {
      method: "put",
      path: "/v1/providers/{name}",
      summary: "Register a provider",
      auth: "deployment",
      body: RegisterProviderBody,
      ok: [201, "registered", R.ProviderInfo],
      handle: authed(putProvider, "deployment"),
    },
    {
      method: "delete",
      path: "/v1/providers/{name}",
      summary: "Remove a provider",
      auth: "deployment",
      ok: [204, "removed"],
      handle: authed(async (request, env) => {
        const removed = await registryStub(env).remove(request.params.name ?? "");
        forgetProviderLists();
        return removed.ok ? new Response(null, { status: 204 }) : failure(removed);
      }, "deployment"),
    },
    {
      method: "post",
      path: "/v1/sessions/{id}/subagents",
      summary: "Start a child: one-shot (201, a run) or continuable (202, a child)",
      auth: "session",
      body: StartSubagentBody,
      ok: [201, "a one-shot run (continuable: 202 with childId and messageId)", R.StartedRun],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        const body = await readBody(request, StartSubagentBody);
        if (!body.ok) return failure(body);
        const { mode, ...start } = body.value;
        // a caller's `traceparent`: the child's first turn joins its trace (README "Traces")
        const trace = parseTraceparent(request.headers.get("traceparent"));
        if (mode === "continuable") {
          const spec = validate(start, ContinuableStartSchema);
          if (!spec.ok) return failure(spec);
          return reply(
            await sessionStub(env, id).startContinuable(caller, compact({ ...spec.value, trace })),
            202,
          );
        }
        return reply(await sessionStub(env, id).startRun(caller, compact({ ...start, trace })), 201);
      }),
    },
    {
      method: "post",
      path: "/v1/sessions/{id}/subagents/drain",
      summary: "Drain continuable children, child-first",
      auth: "session",
      body: DrainBody,
      ok: [202, "accepted", R.AcceptedFlag],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        const body = await readBody(request, DrainBody);
        if (!body.ok) return failure(body);
        return reply(await sessionStub(env, id).drainChildren(caller, body.value.childIds));
      }),
    },
    {
      method: "post",
      path: "/v1/sessions/{id}/subagents/{childId}/messages",
      summary: "Follow up a continuable child (cold-resumes a settled one)",
      auth: "session",
      body: FollowupBody,
      ok: [202, "accepted", R.Accepted],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        const body = await readBody(request, FollowupBody);
        if (!body.ok) return failure(body);
        // a caller's `traceparent`: the turn the message starts joins its trace (README "Traces")
        const trace = parseTraceparent(request.headers.get("traceparent"));
        return reply(
          await sessionStub(env, id).followupChild(
            caller,
            request.params.childId ?? "",
            compact({ ...body.value, trace }),
          ),
          202,
        );
      }),
    },
    {
      method: "post",
      path: "/v1/sessions/{id}/subagents/{childId}/interrupt",
      summary: "Interrupt a child's current turn",
      auth: "session",
      ok: [202, "accepted", R.AcceptedFlag],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        return reply(await sessionStub(env, id).interruptChild(caller, request.params.childId ?? ""), 202);
      }),
    },
    {
      method: "get",
      path: "/v1/sessions/{id}/outbox",
      summary: "The session's outbox",
      auth: "session",
      ok: [200, "entries", R.OutboxPage],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        return reply(await sessionStub(env, id).outbox(caller));
      }),
    },
    {
      method: "get",
      path: "/v1/sessions/{id}/children",
      summary: "The session's children",
      auth: "session",
      ok: [200, "entries", R.ChildListing],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        return reply(await sessionStub(env, id).listChildren(caller));
      }),
    },
    {
      method: "get",
      path: "/v1/sessions/{id}/descendants",
      summary: "Every session below this one, in pre-order, with subtree usage",
      auth: "session",
      ok: [200, "entries", R.DescendantListing],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        return reply(await sessionStub(env, id).listDescendants(caller));
      }),
    },
    {
      method: "get",
      path: "/v1/sessions/{id}/runs/{runId}",
      summary: "A one-shot run (long-poll with ?wait=ms)",
      auth: "session",
      query: RunQuery,
      ok: [200, "the run", R.RunView],
      handle: authed(async (request, env, caller) => {
        const target = runParams(request);
        if ("ok" in target) return failure(target);
        const query = validate(queryOf(request), RunQuery);
        if (!query.ok) return failure(query);
        return reply(await sessionStub(env, target.id).runStatus(caller, target.runId, query.value.wait));
      }),
    },
    {
      method: "delete",
      path: "/v1/sessions/{id}/runs/{runId}",
      summary: "Cancel a one-shot run",
      auth: "session",
      ok: [202, "accepted", R.AcceptedFlag],
      handle: authed(async (request, env, caller) => {
        const target = runParams(request);
        if ("ok" in target) return failure(target);
        return reply(await sessionStub(env, target.id).disposeRun(caller, target.runId), 202);
      }),
    },
  ];
}
