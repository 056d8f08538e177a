import * as z from "zod";
import { DrainBody, FollowupBody } from "../contract/continuable";
import { CreateScheduleBody } from "../contract/control";
import * as R from "../contract/responses";
import { StartSubagentBody } from "../contract/run";
import {
  CompactBody,
  CreateSessionBody,
  DecideApprovalBody,
  DirectoryQuery,
  EventsQuery,
  SendMessageBody,
  StreamQuery,
  TraceQuery,
} from "../contract/wire";
import { RegisterProviderBody } from "../providers/catalog";
import { RunQuery } from "./delegation-routes";

/**
 * The OpenAPI 3.1 document of the HTTP API (`GET /v1/openapi.json`), generated from the zod
 * schemas that validate the requests (and the response schemas of contract/responses.ts) with
 * zod's own JSON Schema conversion; nothing here is a hand-written schema. Every route the
 * router serves has an entry (the OpenAPI test compares them).
 */

type Auth = "none" | "admin" | "deployment" | "session" | "any" | "signed";

interface RouteDoc {
  method: "get" | "post" | "put" | "delete";
  path: string;
  summary: string;
  auth: Auth;
  body?: z.ZodType;
  query?: z.ZodType;
  /** Success status, its description and body schema (none: no body). */
  ok: [number, string, z.ZodType?];
  /** Other content types the route answers with (the event stream, MCP). */
  raw?: string[];
}

const AUTH_TEXT: Record<Auth, string> = {
  none: "no token",
  admin: "an admin token (the deployment's or a tenant's)",
  deployment: "the deployment's admin token",
  session: "the session's token, one of an ancestor, or an admin token",
  any: "any valid token",
  signed: "an HMAC signature of the body (remote delegation callbacks)",
};

export const ROUTE_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    path: "/v1/health",
    summary: "Liveness and version",
    auth: "none",
    ok: [200, "ok", R.Health],
  },
  {
    method: "get",
    path: "/v1/openapi.json",
    summary: "This document",
    auth: "none",
    ok: [200, "OpenAPI 3.1"],
  },
  {
    method: "post",
    path: "/v1/sessions",
    summary: "Create a top-level session (its token is in the answer, once)",
    auth: "admin",
    body: CreateSessionBody,
    ok: [201, "created (200: an idempotent replay, without a token)", R.CreatedSession],
  },
  {
    method: "get",
    path: "/v1/sessions",
    summary: "The tenant's top-level sessions, newest first",
    auth: "admin",
    query: DirectoryQuery,
    ok: [200, "a page", R.DirectoryPage],
  },
  {
    method: "get",
    path: "/v1/sessions/{id}",
    summary: "A session's view",
    auth: "session",
    ok: [200, "the view", R.SessionView],
  },
  {
    method: "post",
    path: "/v1/sessions/{id}/messages",
    summary: "Send a message (accepted into the inbox; the answer is in the log)",
    auth: "session",
    body: SendMessageBody,
    ok: [202, "accepted", R.Accepted],
  },
  {
    method: "get",
    path: "/v1/sessions/{id}/events",
    summary: "Page the event log",
    auth: "session",
    query: EventsQuery,
    ok: [200, "a page", R.EventPage],
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
  },
  {
    method: "post",
    path: "/v1/sessions/{id}/mcp",
    summary: "MCP Streamable HTTP: the session's tools for MCP clients (GET and DELETE answer 405)",
    auth: "session",
    ok: [200, "a JSON-RPC answer (JSON or SSE)"],
    raw: ["application/json", "text/event-stream"],
  },
  {
    method: "get",
    path: "/.well-known/agent-card.json",
    summary: "The A2A agent card: this deployment as an A2A agent (its JSON-RPC endpoint, skills, auth)",
    auth: "none",
    ok: [200, "an A2A 1.0 agent card"],
  },
  {
    method: "post",
    path: "/v1/a2a",
    summary:
      "A2A JSON-RPC (1.0 methods with A2A-Version: 1.0, else the 0.3 names): tasks are top-level sessions",
    auth: "admin",
    ok: [200, "a JSON-RPC answer (JSON, or SSE for streaming methods)"],
    raw: ["application/json", "text/event-stream"],
  },
  {
    method: "post",
    path: "/v1/sessions/{id}/interrupt",
    summary: "Interrupt the open turn",
    auth: "session",
    ok: [202, "accepted", R.AcceptedFlag],
  },
  {
    method: "get",
    path: "/v1/sessions/{id}/approvals",
    summary: "The pending approvals of the session and its descendants, oldest first",
    auth: "session",
    ok: [200, "the pending approvals", R.ApprovalList],
  },
  {
    method: "post",
    path: "/v1/sessions/{id}/approvals/{approvalId}",
    summary:
      "Decide an approval of the session's subtree: approve runs the call once (`scope` `always`: picks an ACP agent's allow-always option, where the approval's `scopes` offer it), deny answers it `denied` (409 ALREADY_DECIDED for the other decision, 409 SCOPE_NOT_OFFERED for an approve of a scope the approval does not offer: nothing decided)",
    auth: "session",
    body: DecideApprovalBody,
    ok: [200, "the decision", R.ApprovalDecided],
  },
  {
    method: "get",
    path: "/v1/sessions/{id}/trace",
    summary:
      "The spans of the session and its local descendants (invoke_agent per turn, chat per model step, execute_tool per tool call) as OTLP/HTTP JSON, a page of at most 4 MiB: `next`, when more spans follow, is the `cursor` of the next page (400 INVALID_REQUEST for a cursor no page gave)",
    auth: "session",
    query: TraceQuery,
    ok: [200, "the trace", R.Trace],
  },
  {
    method: "delete",
    path: "/v1/sessions/{id}",
    summary:
      "Delete the session and its whole tree: every member answers 404 from this answer on, stops its work and erases its storage (a top-level session: an admin only)",
    auth: "session",
    ok: [202, "accepted", R.AcceptedFlag],
  },
  {
    method: "post",
    path: "/v1/sessions/{id}/schedules",
    summary:
      "Deliver `content` as a message at every time of a five-field cron expression in `timezone` (default UTC); each firing time once, a missed period once",
    auth: "session",
    body: CreateScheduleBody,
    ok: [201, "the schedule and its first firing time", R.ScheduleCreated],
  },
  {
    method: "get",
    path: "/v1/sessions/{id}/schedules",
    summary:
      'The session\'s recurring schedules (`"kind": "cron"`) and messages held for their time (`"kind": "message"`: `notBefore`, `schedule_message` with a delay), oldest first; a token of its tree above it may read them too',
    auth: "session",
    ok: [200, "the schedules", R.ScheduleList],
  },
  {
    method: "delete",
    path: "/v1/sessions/{id}/schedules/{scheduleId}",
    summary:
      "Delete a recurring schedule, or a held message before its time (it never enters the inbox); the session's own token, an admin, or a token of its tree above it",
    auth: "session",
    ok: [204, "deleted"],
  },
  {
    method: "post",
    path: "/v1/sessions/{id}/compact",
    summary: "Compact the session's model view before its next model step (at once when idle)",
    auth: "session",
    body: CompactBody,
    ok: [202, "accepted", R.AcceptedFlag],
  },
  {
    method: "post",
    path: "/v1/sessions/{id}/subagents",
    summary: "Start a child: one-shot (201, a run) or continuable (202, a child)",
    auth: "session",
    body: StartSubagentBody,
    ok: [201, "a one-shot run (continuable: 202 with childId and messageId)", R.StartedRun],
  },
  {
    method: "post",
    path: "/v1/sessions/{id}/subagents/drain",
    summary: "Drain continuable children, child-first",
    auth: "session",
    body: DrainBody,
    ok: [202, "accepted", R.AcceptedFlag],
  },
  {
    method: "post",
    path: "/v1/sessions/{id}/subagents/{childId}/messages",
    summary: "Follow up a continuable child (cold-resumes a settled one)",
    auth: "session",
    body: FollowupBody,
    ok: [202, "accepted", R.Accepted],
  },
  {
    method: "post",
    path: "/v1/sessions/{id}/subagents/{childId}/interrupt",
    summary: "Interrupt a child's current turn",
    auth: "session",
    ok: [202, "accepted", R.AcceptedFlag],
  },
  {
    method: "get",
    path: "/v1/sessions/{id}/outbox",
    summary: "The session's outbox",
    auth: "session",
    ok: [200, "entries", R.OutboxPage],
  },
  {
    method: "get",
    path: "/v1/sessions/{id}/children",
    summary: "The session's children",
    auth: "session",
    ok: [200, "entries", R.ChildListing],
  },
  {
    method: "get",
    path: "/v1/sessions/{id}/descendants",
    summary: "Every session below this one, in pre-order, with subtree usage",
    auth: "session",
    ok: [200, "entries", R.DescendantListing],
  },
  {
    method: "get",
    path: "/v1/sessions/{id}/runs/{runId}",
    summary: "A one-shot run (long-poll with ?wait=ms)",
    auth: "session",
    query: RunQuery,
    ok: [200, "the run", R.RunView],
  },
  {
    method: "delete",
    path: "/v1/sessions/{id}/runs/{runId}",
    summary: "Cancel a one-shot run",
    auth: "session",
    ok: [202, "accepted", R.AcceptedFlag],
  },
  {
    method: "get",
    path: "/v1/providers",
    summary: "The providers",
    auth: "any",
    ok: [200, "providers", R.ProviderList],
  },
  {
    method: "get",
    path: "/v1/providers/events",
    summary: "The registry's add and remove events",
    auth: "any",
    query: EventsQuery,
    ok: [200, "a page", R.ProviderEventPage],
  },
  {
    method: "put",
    path: "/v1/providers/{name}",
    summary: "Register a provider",
    auth: "deployment",
    body: RegisterProviderBody,
    ok: [201, "registered", R.ProviderInfo],
  },
  {
    method: "delete",
    path: "/v1/providers/{name}",
    summary: "Remove a provider",
    auth: "deployment",
    ok: [204, "removed"],
  },
  {
    method: "post",
    path: "/v1/callbacks/{parentId}/{runId}",
    summary: "A remote deployment posts a run's signed result",
    auth: "signed",
    ok: [200, "applied"],
  },
];

/** The error answers every route may give (the envelope, with the statuses of docs/api.md). */
const ERROR_STATUSES = ["400", "401", "403", "404", "409", "413", "422", "429", "500", "503"];

function schemaOf(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
    target: "draft-2020-12",
  }) as Record<string, unknown>;
  return json;
}

function queryParameters(schema: z.ZodType): unknown[] {
  const json = schemaOf(schema, "input") as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name,
    in: "query",
    required: json.required?.includes(name) ?? false,
    schema: property,
  }));
}

/** The document, for a deployment whose API lives under `base`. */
export function openApiDocument(base: string, version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTE_DOCS) {
    const params = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    const [status, description, body] = route.ok;
    const success: Record<string, unknown> = { description };
    if (body) success.content = { "application/json": { schema: schemaOf(body, "output") } };
    else if (route.raw) success.content = Object.fromEntries(route.raw.map((type) => [type, {}]));
    const responses: Record<string, unknown> = { [String(status)]: success };
    for (const code of ERROR_STATUSES) {
      responses[code] = {
        description: "the error envelope",
        content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } },
      };
    }
    paths[`${base}${route.path}`] ??= {};
    paths[`${base}${route.path}`]![route.method] = {
      summary: route.summary,
      description: `Authorization: ${AUTH_TEXT[route.auth]}.`,
      ...(route.auth === "none" || route.auth === "signed" ? { security: [] } : {}),
      parameters: [...params, ...(route.query ? queryParameters(route.query) : [])],
      ...(route.body
        ? {
            requestBody: {
              required: true,
              content: { "application/json": { schema: schemaOf(route.body, "input") } },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "subagents-edge",
      version,
      description: "Durable subagent delegation on Cloudflare Workers and Durable Objects (docs/api.md).",
    },
    servers: [{ url: "/" }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: { ErrorEnvelope: schemaOf(R.ErrorEnvelope, "output") },
    },
    paths,
  };
}
