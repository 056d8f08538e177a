import { compact } from "../core/compact";
import { A2A_VERSION_HEADER, AgentCard } from "@a2a-js/sdk";
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import { JsonRpcTransportHandler, ServerCallContext, validateVersion } from "@a2a-js/sdk/server";
import { agentCard } from "../a2a/agent-card";
import { SessionTaskHandler, type TaskSessions } from "../a2a/session-tasks";
import { fail, ok } from "../contract/errors";
import { failure } from "../contract/respond";
import { type Caller, tenantOf } from "../contract/session";
import { OperatorUrl } from "../contract/wire";
import type { Deployment } from "../platform/deployment";
import { registryStub, sessionStub } from "../platform/stubs";
import { depthExceeds, MAX_JSON_DEPTH, readText } from "./body";
import { parseDirectoryCursor } from "./directory-cursor";
import { parseTraceparent } from "../trace/traceparent";
import type { Traced } from "../contract/trace";
import { createTopLevelSession } from "./session-create";

/**
 * The A2A face's protocol layer (docs/semantics.md §16), loaded by its routes (a2a-route.ts) on
 * the first request that reaches it: the official SDK's JSON-RPC transport handlers (A2A 1.0, and
 * 0.3 for requests without an `A2A-Version` header or with `0.3`) over our request handler, which
 * keeps every task in a session; a tenant sees only its own sessions as tasks.
 */

/** The agent card (`GET /.well-known/agent-card.json`). */
export function agentCardResponse(request: Request, env: Env, base: string, version: string): Response {
  const card = agentCard(apiRootOf(request, env, base), version);
  return new Response(JSON.stringify(AgentCard.toJSON(card)), {
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "public, max-age=300" },
  });
}

/** One JSON-RPC request to `/v1/a2a` of an authenticated admin or tenant admin. */
export async function a2aRpc(
  request: Request,
  env: Env,
  deployment: Deployment,
  caller: Caller & { kind: "admin" },
  base: string,
  version: string,
): Promise<Response> {
  const body = await readText(request);
  if (!body.ok) return failure(body);
  const card = agentCard(apiRootOf(request, env, base), version);
  // a caller's `traceparent`: the turns its messages start join its trace (README "Traces")
  const sent = compact({ trace: parseTraceparent(request.headers.get("traceparent")) });
  const handler = new SessionTaskHandler(card, sessionsFor(env, deployment, caller, sent));
  const requested = request.headers.get(A2A_VERSION_HEADER) ?? "";
  const legacy = requested === "" || requested === "0.3";
  const context = new ServerCallContext({ ...(requested ? { requestedVersion: requested } : {}) });
  const mapError = legacy
    ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError
    : JsonRpcTransportHandler.mapToJSONRPCError;
  const parsed = parseJson(body.value);
  if (parsed === undefined)
    return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
  const id = typeof parsed === "object" && parsed !== null && "id" in parsed ? parsed.id : null;
  // the limit every request of the API has, before the SDK's parsers walk it
  if (depthExceeds(parsed, MAX_JSON_DEPTH)) {
    const message = `Invalid Request: the request nests deeper than ${MAX_JSON_DEPTH} levels`;
    return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32600, message } });
  }
  try {
    if (!legacy) validateVersion(context.requestedVersion, card, "JSONRPC");
    const answer = legacy
      ? await new LegacyJsonRpcTransportHandler(handler).handle(parsed as Record<string, unknown>, context)
      : await new JsonRpcTransportHandler(handler).handle(parsed as Record<string, unknown>, context);
    if (!(Symbol.asyncIterator in answer)) return Response.json(answer);
    // as the SDK's own servers do: an error before the first event is a plain JSON-RPC error
    const first = await answer.next();
    return sseOf(first, answer, id, mapError);
  } catch (error) {
    return Response.json({ jsonrpc: "2.0", id, error: mapError(error) });
  }
}

/** The body as JSON (undefined when it is not JSON: a JSON-RPC parse error). */
function parseJson(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Where the API is served: PUBLIC_URL when it is set and valid (the deployment's public URL, its
 * base path included, as remote callbacks use it), else the request's origin and the base path.
 */
function apiRootOf(request: Request, env: Env, base: string): string {
  const configured = OperatorUrl.safeParse(env.PUBLIC_URL);
  return configured.success ? configured.data.replace(/\/+$/, "") : `${new URL(request.url).origin}${base}`;
}

/**
 * The runtime as the caller may use it: their tenant's sessions, through the sessions' own checks.
 * `sent`: what each message the request sends carries besides its content (the caller's span).
 */
function sessionsFor(
  env: Env,
  deployment: Deployment,
  caller: Caller & { kind: "admin" },
  sent: Traced,
): TaskSessions {
  const tenant = tenantOf(caller);
  return {
    async create(key) {
      const created = await createTopLevelSession(env, deployment, { idempotencyKey: key }, tenant);
      return created.ok ? ok({ id: created.value.id }) : created;
    },
    send: (id, content, key) => sessionStub(env, id).send(caller, { content, idempotencyKey: key, ...sent }),
    // small pages: a task's read folds the log and keeps little of it (session-tasks.ts)
    events: (id, after, waitMs, text) =>
      sessionStub(env, id).events(
        caller,
        { after, limit: 500, maxBytes: A2A_READ_PAGE_BYTES, ...compact({ text }) },
        waitMs,
      ),
    interrupt: (id) => sessionStub(env, id).interrupt(caller),
    decide: (id, approvalId, decision) => sessionStub(env, id).decideApproval(caller, approvalId, decision),
    async list(limit, cursor) {
      const before = cursor === undefined ? undefined : parseDirectoryCursor(cursor);
      if (cursor !== undefined && before === undefined)
        return fail("INVALID_REQUEST", "pageToken: not a token from a previous page");
      const page = await registryStub(env).sessions(tenant, limit, before);
      return ok({ ids: page.sessions.map((s) => s.id), next: page.next });
    },
  };
}

/** The most event data one page of a task's read carries past its first event. */
const A2A_READ_PAGE_BYTES = 256 * 1024;

const encoder = new TextEncoder();
/** As the session's own event stream: a comment line at least every 30 s. */
const SSE_HEARTBEAT_MS = 25_000;

/** A JSON-RPC result stream as Server-Sent Events; an error mid-stream is a last `event: error`. */
function sseOf(
  first: IteratorResult<unknown, void>,
  stream: AsyncGenerator<unknown, void, undefined>,
  id: unknown,
  mapError: (error: unknown) => unknown,
): Response {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const frame = (event: unknown) => encoder.encode(`data: ${JSON.stringify(event)}\n\n`);
  // a comment line now and then keeps proxies from closing a stream whose task works quietly,
  // and tells a gone client apart (its write fails; the stream then stops following the task)
  const heartbeat = setInterval(() => {
    writer.write(encoder.encode(": keepalive\n\n")).catch(() => void stream.return(undefined));
  }, SSE_HEARTBEAT_MS);
  void (async () => {
    try {
      if (first.done) return;
      await writer.write(frame(first.value));
      for await (const event of stream) await writer.write(frame(event));
    } catch (error) {
      const envelope = { jsonrpc: "2.0", id, error: mapError(error) };
      await writer
        .write(encoder.encode(`event: error\ndata: ${JSON.stringify(envelope)}\n\n`))
        .catch(() => {});
    } finally {
      clearInterval(heartbeat);
      await writer.close().catch(() => {});
    }
  })();
  return new Response(readable, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" },
  });
}
