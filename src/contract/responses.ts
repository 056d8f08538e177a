import * as z from "zod";
import { lazySchema } from "./lazy";
import { ERROR_STATUS } from "./errors";

/**
 * The shapes of the API's answers, as zod schemas, for the OpenAPI document (`GET
 * /v1/openapi.json`): what a client may rely on. The runtime's own types (session.ts, run.ts,
 * listing.ts, ...) are the source; these describe them on the wire and are checked against real
 * answers in the OpenAPI test.
 */

const Usage = lazySchema(() =>
  z.object({
    inputTokens: z.number().int(),
    outputTokens: z.number().int(),
    cachedInputTokens: z.number().int().optional(),
    reasoningTokens: z.number().int().optional(),
    costUsd: z.number().nonnegative().optional(),
  }),
);
const Text = lazySchema(() => z.object({ type: z.literal("text"), text: z.string() }));

export const ErrorEnvelope = lazySchema(() =>
  z
    .object({
      error: z.object({
        code: z.enum(
          Object.keys(ERROR_STATUS) as [keyof typeof ERROR_STATUS, ...(keyof typeof ERROR_STATUS)[]],
        ),
        message: z.string(),
        issues: z
          .array(z.object({ path: z.array(z.string()), message: z.string(), code: z.string() }))
          .optional(),
      }),
    })
    .meta({ id: "ErrorEnvelope" }),
);

export const Health = lazySchema(() => z.object({ ok: z.literal(true), version: z.string() }));

export const SessionView = lazySchema(() =>
  z
    .looseObject({
      id: z.string(),
      parentSession: z.string().nullable(),
      origin: z.enum(["subagent"]).nullable(),
      delegationDepth: z.number().int(),
      createdAt: z.number().int(),
      status: z.enum(["running", "waiting", "idle"]),
      mode: z.enum(["one-shot", "continuable"]).optional(),
      label: z.string().optional(),
      model: z.string(),
      lastSeq: z.number().int(),
      usage: Usage.optional(),
      compactionUsage: Usage.optional(),
      subtreeUsage: Usage.optional(),
      budget: z
        .object({
          tokens: z.number().int().optional(),
          usd: z.number().optional(),
          used: z.number().int(),
          usedUsd: z.number().optional(),
          shared: z.literal(true).optional(),
        })
        .optional(),
      mcpServers: z.array(z.object({ name: z.string(), url: z.string() })).optional(),
      jurisdiction: z.string().optional(),
      locationHint: z.string().optional(),
    })
    .meta({ id: "SessionView" }),
);

export const CreatedSession = lazySchema(() => SessionView.extend({ token: z.string().optional() }));

export const SessionEvent = lazySchema(() =>
  z
    .object({
      seq: z.number().int(),
      type: z.string(),
      at: z.number().int(),
      data: z.record(z.string(), z.unknown()),
    })
    .meta({
      id: "SessionEvent",
      description: "One log event; `data` by `type` (docs/semantics.md, the event catalogue).",
    }),
);

export const EventPage = lazySchema(() =>
  z.object({ events: z.array(SessionEvent), next: z.number().int().nullable() }),
);

export const Accepted = lazySchema(() => z.object({ messageId: z.string() }));
export const AcceptedFlag = lazySchema(() => z.object({ accepted: z.literal(true) }));

export const ApprovalList = lazySchema(() =>
  z.object({
    approvals: z.array(
      z.object({
        approvalId: z.string(),
        sessionId: z.string(),
        tool: z.string(),
        args: z.unknown(),
        toolCallId: z.string(),
        requestedAt: z.number().int(),
        scopes: z
          .array(z.enum(["once", "always"]))
          .optional()
          .meta({
            description:
              'the scopes an approve can take (`"scope"` of the decision), where it is not `once` alone: an ACP agent\'s permission request offers its allow options',
          }),
      }),
    ),
  }),
);

export const ScheduleCreated = lazySchema(() =>
  z.object({
    scheduleId: z.string(),
    next: z.number().int().meta({ description: "epoch ms of the first firing" }),
  }),
);

export const ScheduleList = lazySchema(() =>
  z.object({
    schedules: z.array(
      z.discriminatedUnion("kind", [
        z.object({
          scheduleId: z.string(),
          kind: z.literal("cron"),
          cron: z.string(),
          timezone: z.string(),
          next: z.number().int().meta({ description: "epoch ms of the next firing" }),
          content: z.union([z.string(), z.array(Text)]).meta({ description: "as it was given" }),
        }),
        z.object({
          scheduleId: z.string(),
          kind: z.literal("message"),
          next: z.number().int().meta({ description: "epoch ms it is delivered at" }),
          content: z.union([z.string(), z.array(Text)]).meta({ description: "as it was given" }),
          messageId: z.string().meta({ description: "the id its sender was given at acceptance" }),
          delivery: z.enum(["next-turn", "next-step", "interrupt"]),
        }),
      ]),
    ),
  }),
);

export const ApprovalDecided = lazySchema(() =>
  z.object({
    approvalId: z.string(),
    decision: z.enum(["approve", "deny"]),
  }),
);

export const SubagentResult = lazySchema(() =>
  z.object({
    output: z.array(Text),
    structured: z.unknown().optional(),
    stopReason: z.enum(["completed", "aborted", "error", "max-tokens", "refusal"]),
    diagnostic: z.string().optional(),
    usage: Usage.optional(),
  }),
);

export const StartedRun = lazySchema(() =>
  z.object({ runId: z.string(), id: z.string(), local: z.boolean() }),
);
export const StartedChild = lazySchema(() => z.object({ childId: z.string(), messageId: z.string() }));
export const RunView = lazySchema(() =>
  StartedRun.extend({
    provider: z.string(),
    state: z.enum(["running", "settled"]),
    result: SubagentResult.optional(),
    /** An out-of-process run's far side: the remote session, the ACP session or the A2A task. */
    counterpart: z.object({ kind: z.enum(["remote", "acp", "a2a"]), id: z.string() }).optional(),
  }),
);

export const ProviderInfo = lazySchema(() =>
  z.looseObject({
    name: z.string(),
    kind: z.enum(["spawn", "fork", "remote", "acp", "a2a"]),
    capabilities: z.object({
      outputSchema: z.boolean(),
      depthLimit: z.boolean(),
      toolFilter: z.boolean(),
      persona: z.boolean(),
    }),
    inheritsParentContext: z.boolean(),
    continuable: z.boolean(),
    local: z.boolean(),
    url: z.string().optional(),
    tenants: z.array(z.string()).optional(),
  }),
);
export const ProviderList = lazySchema(() => z.object({ providers: z.array(ProviderInfo) }));
export const ProviderEventPage = lazySchema(() =>
  z.object({
    events: z.array(
      z.object({ seq: z.number().int(), type: z.string(), at: z.number().int(), data: z.unknown() }),
    ),
    next: z.number().int().nullable(),
  }),
);

export const DirectoryPage = lazySchema(() =>
  z.object({
    sessions: z.array(
      z.looseObject({ id: z.string(), createdAt: z.number().int(), label: z.string().optional() }),
    ),
    next: z.string().nullable(),
  }),
);

const Entry = lazySchema(() =>
  z.looseObject({
    kind: z.enum(["child", "diagnostic"]),
    id: z.string(),
    createdAt: z.number().int(),
    usage: Usage.optional(),
  }),
);
export const ChildListing = lazySchema(() => z.object({ entries: z.array(Entry) }));
export const DescendantListing = lazySchema(() =>
  z.object({
    entries: z.array(
      Entry.extend({ parentId: z.string(), depth: z.number().int(), subtreeUsage: Usage.optional() }),
    ),
    subtreeUsage: Usage.optional(),
  }),
);
export const OutboxPage = lazySchema(() =>
  z.object({
    entries: z.array(
      z.looseObject({
        id: z.string(),
        target: z.string(),
        kind: z.string(),
        attempts: z.number().int(),
        state: z.enum(["pending", "delivered", "dead"]),
      }),
    ),
  }),
);

/** `GET /v1/sessions/:id/trace`: OTLP/HTTP JSON (an `ExportTraceServiceRequest`). */
export const Trace = lazySchema(() =>
  z
    .object({
      resourceSpans: z.array(
        z.object({
          resource: z.object({ attributes: z.array(z.unknown()) }),
          scopeSpans: z.array(
            z.object({
              scope: z.object({ name: z.string(), version: z.string() }),
              spans: z.array(z.unknown()),
            }),
          ),
        }),
      ),
      /** More spans follow: the `cursor` of the next page (absent on the last page). */
      next: z.string().optional(),
    })
    .meta({
      id: "Trace",
      description:
        "OTLP/HTTP JSON: a page (at most 4 MiB) of the spans of the session and its local descendants; `next` when more follow",
    }),
);
