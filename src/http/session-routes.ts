import { fail } from "../contract/errors";
import * as R from "../contract/responses";
import { failure, json } from "../contract/respond";
import { CALLER_HEADER, type Caller, DEFAULT_TENANT, tenantOf } from "../contract/session";
import { offersStreamProtocol, STREAM_PROTOCOL } from "../contract/stream";
import {
  CompactBody,
  CreateSessionBody,
  DecideApprovalBody,
  DirectoryQuery,
  EventsQuery,
  SendMessageBody,
  StreamQuery,
} from "../contract/wire";
import { compact } from "../core/compact";
import type { Deployment } from "../platform/deployment";
import { registryStub, sessionStub } from "../platform/stubs";
import { parseTraceparent } from "../trace/traceparent";
import { authed, reply } from "./authed";
import { queryOf, readBody, readJsonText, validate } from "./body";
import { parseDirectoryCursor } from "./directory-cursor";
import { approvalIdParam, sessionIdParam } from "./path-params";
import type { Route } from "./route";
import { createTopLevelSession } from "./session-create";

/**
 * `headers` with the authenticated caller in `CALLER_HEADER`: the one way a request this
 * Worker forwards to a session object's `fetch` (streams, MCP) says who made it.
 */
function withCaller(headers: Headers, caller: Caller): Headers {
  headers.set(CALLER_HEADER, JSON.stringify(caller));
  return headers;
}

function adminTenant(caller: Caller): string {
  return caller.kind === "admin" ? tenantOf(caller) : DEFAULT_TENANT;
}

/**
 * A session's routes (docs/api.md): top-level sessions created and listed, and a session's view,
 * messages, log and stream, MCP face, interrupt, compaction and approvals.
 */
export function sessionRoutes(deployment: Deployment): Route[] {
  return [
    {
      method: "post",
      path: "/v1/sessions",
      summary: "Create a top-level session (its token is in the answer, once)",
      auth: "admin",
      body: CreateSessionBody,
      ok: [201, "created (200: an idempotent replay, without a token)", R.CreatedSession],
      handle: authed(async (request, env, caller) => {
        const body = await readBody(request, CreateSessionBody, { idempotencyKeyHeader: true });
        if (!body.ok) return failure(body);
        const created = await createTopLevelSession(env, deployment, body.value, adminTenant(caller));
        // 201 with the token when created; 200 without one for an idempotent replay
        return reply(created, created.ok && created.value.token === undefined ? 200 : 201);
      }, "admin"),
    },
    {
      method: "get",
      path: "/v1/sessions",
      summary: "The tenant's top-level sessions, newest first",
      auth: "admin",
      query: DirectoryQuery,
      ok: [200, "a page", R.DirectoryPage],
      handle: authed(async (request, env, caller) => {
        const query = validate(queryOf(request), DirectoryQuery);
        if (!query.ok) return failure(query);
        const { limit, cursor } = query.value;
        const before = cursor === undefined ? undefined : parseDirectoryCursor(cursor);
        if (cursor !== undefined && before === undefined)
          return failure(fail("INVALID_REQUEST", "cursor: not a cursor from a previous page"));
        return json(await registryStub(env).sessions(adminTenant(caller), limit, before));
      }, "admin"),
    },
    {
      method: "get",
      path: "/v1/sessions/{id}",
      summary: "A session's view",
      auth: "session",
      ok: [200, "the view", R.SessionView],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        return reply(await sessionStub(env, id).describe(caller));
      }),
    },
    {
      method: "post",
      path: "/v1/sessions/{id}/messages",
      summary: "Send a message (accepted into the inbox; the answer is in the log)",
      auth: "session",
      body: SendMessageBody,
      ok: [202, "accepted", R.Accepted],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        const body = await readBody(request, SendMessageBody, { idempotencyKeyHeader: true });
        if (!body.ok) return failure(body);
        // a caller's `traceparent`: the turn the message starts joins its trace (README "Traces")
        const trace = parseTraceparent(request.headers.get("traceparent"));
        return reply(await sessionStub(env, id).send(caller, compact({ ...body.value, trace })), 202);
      }),
    },
    {
      method: "get",
      path: "/v1/sessions/{id}/events",
      summary: "Page the event log",
      auth: "session",
      query: EventsQuery,
      ok: [200, "a page", R.EventPage],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        const query = validate(queryOf(request), EventsQuery);
        if (!query.ok) return failure(query);
        return reply(await sessionStub(env, id).events(caller, query.value));
      }),
    },
    {
      method: "get",
      path: "/v1/sessions/{id}/events/stream",
      summary:
        "The event log, replayed then live: a WebSocket upgrade, or Server-Sent Events with Accept: text/event-stream",
      auth: "session",
      query: StreamQuery,
      ok: [200, "an SSE stream (101 for a WebSocket upgrade)"],
      raw: ["text/event-stream"],
      handle: authed(async (request, env, caller) => {
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
          if (resume && !resume.ok)
            return failure(fail("INVALID_REQUEST", "Last-Event-ID: not an event seq"));
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
    },
    {
      method: "post",
      path: "/v1/sessions/{id}/mcp",
      // MCP's Streamable HTTP transport: the session's tools for any MCP client (docs/semantics.md
      // §14). The token is checked here and by the session before a byte of MCP is read; the SDK
      // answers GET and DELETE (2025 session operations) 405, statelessly.
      summary: "MCP Streamable HTTP: the session's tools for MCP clients (GET and DELETE answer 405)",
      auth: "session",
      ok: [200, "a JSON-RPC answer (JSON or SSE)"],
      raw: ["application/json", "text/event-stream"],
      everyMethod: true,
      handle: authed(async (request, env, caller) => {
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
    },
    {
      method: "post",
      path: "/v1/sessions/{id}/interrupt",
      summary: "Interrupt the open turn",
      auth: "session",
      ok: [202, "accepted", R.AcceptedFlag],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        return reply(await sessionStub(env, id).interrupt(caller), 202);
      }),
    },
    {
      method: "post",
      path: "/v1/sessions/{id}/compact",
      summary: "Compact the session's model view before its next model step (at once when idle)",
      auth: "session",
      body: CompactBody,
      ok: [202, "accepted", R.AcceptedFlag],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        const body = await readBody(request, CompactBody);
        if (!body.ok) return failure(body);
        return reply(await sessionStub(env, id).compact(caller), 202);
      }),
    },
    {
      method: "get",
      path: "/v1/sessions/{id}/approvals",
      summary: "The pending approvals of the session and its descendants, oldest first",
      auth: "session",
      ok: [200, "the pending approvals", R.ApprovalList],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        return reply(await sessionStub(env, id).approvals(caller));
      }),
    },
    {
      method: "post",
      path: "/v1/sessions/{id}/approvals/{approvalId}",
      summary:
        "Decide an approval of the session's subtree: approve runs the call once (`scope` `always`: picks an ACP agent's allow-always option, where the approval's `scopes` offer it), deny answers it `denied` (409 ALREADY_DECIDED for the other decision, 409 SCOPE_NOT_OFFERED for an approve of a scope the approval does not offer: nothing decided)",
      auth: "session",
      body: DecideApprovalBody,
      ok: [200, "the decision", R.ApprovalDecided],
      handle: authed(async (request, env, caller) => {
        const id = sessionIdParam(request);
        if (typeof id !== "string") return failure(id);
        const approvalId = approvalIdParam(request);
        if (typeof approvalId !== "string") return failure(approvalId);
        const body = await readBody(request, DecideApprovalBody);
        if (!body.ok) return failure(body);
        return reply(await sessionStub(env, id).decideApproval(caller, approvalId, compact(body.value)));
      }),
    },
  ];
}
