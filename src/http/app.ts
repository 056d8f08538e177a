import { type IRequest, Router } from "itty-router";
import { fail, SubagentError } from "../contract/errors";
import {
  CompactBody,
  CreateSessionBody,
  DecideApprovalBody,
  DirectoryQuery,
  EventsQuery,
  SendMessageBody,
  StreamQuery,
} from "../contract/wire";
import { createTopLevelSession } from "./session-create";
import { authed, reply } from "./authed";
import { addCallbackRoute } from "./callback-route";
import { addDelegationRoutes } from "./delegation-routes";
import { addControlRoutes } from "./control-routes";
import { queryOf, readBody, readJsonText, validate } from "./body";
import { failure, json } from "../contract/respond";
import { registryStub, sessionStub } from "../platform/stubs";
import { CALLER_HEADER, type Caller, DEFAULT_TENANT, tenantOf } from "../contract/session";
import { offersStreamProtocol, STREAM_PROTOCOL } from "../contract/stream";
import { compact } from "../core/compact";
import type { Deployment } from "../platform/deployment";
import { parseDirectoryCursor } from "./directory-cursor";
import { addA2aRoutes } from "./a2a-route";
import { unhandledFailure } from "./unhandled";
import { parseTraceparent } from "../trace/traceparent";
import { approvalIdParam, sessionIdParam } from "./path-params";

/**
 * The public HTTP API (docs/api.md): auth -> validate -> route to the session's object. Every error
 * is the envelope with a stable code; a client mistake is never a 5xx.
 */

export const VERSION = "0.1.0";

/**
 * `headers` with the authenticated caller in `CALLER_HEADER`: the one way a request this
 * Worker forwards to a session object's `fetch` (streams, MCP) says who made it.
 */
function withCaller(headers: Headers, caller: Caller): Headers {
  headers.set(CALLER_HEADER, JSON.stringify(caller));
  return headers;
}

/** The API's routes under `base` (`""`: `/v1/...`), for the deployment's tools and models. */
export function buildRouter(deployment: Deployment, base = "") {
  const router = Router<IRequest, [Env, ExecutionContext]>({
    base,
    catch: (error: unknown) => {
      if (error instanceof SubagentError) return failure(error.toFailure());
      console.error("unhandled error", error instanceof Error ? error.stack : error);
      return failure(unhandledFailure(error));
    },
  });

  router.get("/v1/health", () => json({ ok: true, version: VERSION }));

  // generated once per router, from the zod schemas that validate the requests, on its first
  // request (the document's own schemas of the answers are built then, not at the Worker's start)
  let openApi: string | undefined;
  router.get("/v1/openapi.json", async () => {
    if (openApi === undefined) {
      const { openApiDocument } = await import("./openapi");
      openApi = JSON.stringify(openApiDocument(base, VERSION));
    }
    return new Response(openApi, { headers: { "content-type": "application/json; charset=utf-8" } });
  });

  router.post(
    "/v1/sessions",
    authed(async (request, env, caller) => {
      const body = await readBody(request, CreateSessionBody, { idempotencyKeyHeader: true });
      if (!body.ok) return failure(body);
      const created = await createTopLevelSession(env, deployment, body.value, adminTenant(caller));
      // 201 with the token when created; 200 without one for an idempotent replay
      return reply(created, created.ok && created.value.token === undefined ? 200 : 201);
    }, "admin"),
  );

  router.get(
    "/v1/sessions",
    authed(async (request, env, caller) => {
      const query = validate(queryOf(request), DirectoryQuery);
      if (!query.ok) return failure(query);
      const { limit, cursor } = query.value;
      const before = cursor === undefined ? undefined : parseDirectoryCursor(cursor);
      if (cursor !== undefined && before === undefined)
        return failure(fail("INVALID_REQUEST", "cursor: not a cursor from a previous page"));
      return json(await registryStub(env).sessions(adminTenant(caller), limit, before));
    }, "admin"),
  );

  router.get(
    "/v1/sessions/:id",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      return reply(await sessionStub(env, id).describe(caller));
    }),
  );

  router.post(
    "/v1/sessions/:id/messages",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      const body = await readBody(request, SendMessageBody, { idempotencyKeyHeader: true });
      if (!body.ok) return failure(body);
      // a caller's `traceparent`: the turn the message starts joins its trace (README "Traces")
      const trace = parseTraceparent(request.headers.get("traceparent"));
      return reply(await sessionStub(env, id).send(caller, compact({ ...body.value, trace })), 202);
    }),
  );

  router.get(
    "/v1/sessions/:id/events",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      const query = validate(queryOf(request), EventsQuery);
      if (!query.ok) return failure(query);
      return reply(await sessionStub(env, id).events(caller, query.value));
    }),
  );

  router.get(
    "/v1/sessions/:id/events/stream",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      const websocket = request.headers.get("upgrade")?.toLowerCase() === "websocket";
      const sse = !websocket && /\btext\/event-stream\b/i.test(request.headers.get("accept") ?? "");
      if (!websocket && !sse) {
        return failure(
          fail("INVALID_REQUEST", "this route needs a WebSocket upgrade or Accept: text/event-stream"),
        );
      }
      const query = validate(queryOf(request), StreamQuery);
      if (!query.ok) return failure(query);
      const deltas = query.value.deltas ? "&deltas=true" : "";
      if (sse) {
        // a reconnecting EventSource says where it was with Last-Event-ID (a seq); it wins over ?after=
        const lastEventId = request.headers.get("last-event-id");
        const resume = lastEventId === null ? undefined : validate({ after: lastEventId }, StreamQuery);
        if (resume && !resume.ok) return failure(fail("INVALID_REQUEST", "Last-Event-ID: not an event seq"));
        const after = resume?.ok ? resume.value.after : query.value.after;
        const forwarded = new Request(`https://session/stream?transport=sse&after=${after}${deltas}`, {
          headers: withCaller(new Headers(), caller),
        });
        return sessionStub(env, id).fetch(forwarded);
      }
      const headers = withCaller(new Headers({ upgrade: "websocket" }), caller);
      if (offersStreamProtocol(request.headers.get("sec-websocket-protocol")))
        headers.set("sec-websocket-protocol", STREAM_PROTOCOL);
      const forwarded = new Request(`https://session/stream?after=${query.value.after}${deltas}`, {
        headers,
      });
      return sessionStub(env, id).fetch(forwarded);
    }),
  );

  // MCP's Streamable HTTP transport: the session's tools for any MCP client (docs/semantics.md §14). The
  // token is checked here and by the session before a byte of MCP is read; the SDK answers GET
  // and DELETE (2025 session operations) 405, statelessly.
  router.all(
    "/v1/sessions/:id/mcp",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      // the body is read here with every route's limits (256 KiB, 128 levels of nesting) before
      // the MCP layer sees a byte of it; the session gets the validated text, never the stream
      const bodyless = request.method === "GET" || request.method === "HEAD";
      const body = bodyless ? undefined : await readJsonText(request);
      if (body && !body.ok) return failure(body);
      const headers = withCaller(new Headers(request.headers), caller);
      headers.delete("authorization");
      headers.delete("content-length");
      headers.delete("transfer-encoding");
      const forwarded = new Request("https://session/mcp", {
        method: request.method,
        headers,
        ...(body ? { body: body.value } : {}),
      });
      return sessionStub(env, id).fetch(forwarded);
    }),
  );

  router.post(
    "/v1/sessions/:id/interrupt",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      return reply(await sessionStub(env, id).interrupt(caller), 202);
    }),
  );

  router.post(
    "/v1/sessions/:id/compact",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      const body = await readBody(request, CompactBody);
      if (!body.ok) return failure(body);
      return reply(await sessionStub(env, id).compact(caller), 202);
    }),
  );

  router.get(
    "/v1/sessions/:id/approvals",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      return reply(await sessionStub(env, id).approvals(caller));
    }),
  );

  router.post(
    "/v1/sessions/:id/approvals/:approvalId",
    authed(async (request, env, caller) => {
      const id = sessionIdParam(request);
      if (typeof id !== "string") return failure(id);
      const approvalId = approvalIdParam(request);
      if (typeof approvalId !== "string") return failure(approvalId);
      const body = await readBody(request, DecideApprovalBody);
      if (!body.ok) return failure(body);
      return reply(await sessionStub(env, id).decideApproval(caller, approvalId, compact(body.value)));
    }),
  );

  addDelegationRoutes(router);
  addControlRoutes(router);
  addCallbackRoute(router);
  addA2aRoutes(router, deployment, base, VERSION);

  router.all("/v1/*", () => failure(fail("NOT_FOUND", "no such route")));
  router.all("*", () => failure(fail("NOT_FOUND", "no such route")));
  return router;
}

function adminTenant(caller: Caller): string {
  return caller.kind === "admin" ? tenantOf(caller) : DEFAULT_TENANT;
}
