import type { EventData, MessageSource, SessionEvent } from "../../src/client";
import { type Child, h } from "./dom";
import { clock, dateTime, json, shortId, text } from "./format";

/**
 * One transcript entry per log event that a person reads: messages by who sent them (the user, a
 * coordinator's relay, a subagent's report, a settlement notice), assistant answers with their tool
 * calls, tool results, child lifecycle edges, turn ends, context compactions, approvals asked
 * and decided, and schedules made and deleted. Bookkeeping events render nothing.
 */

export interface RenderContext {
  /** Selects another session (a child named in a lifecycle edge). */
  select(id: string): void;
  labelOf(id: string): string | undefined;
}

const SILENT = new Set(["turn/start", "agent/inbox/claimed", "subagent/descriptor"]);

type Data<T extends keyof EventData> = EventData[T];

export function renderEvent(event: SessionEvent, ctx: RenderContext): HTMLElement | null {
  if (SILENT.has(event.type)) return null;
  const data = event.data as unknown;
  switch (event.type) {
    case "user/message":
      return userMessage(event, data as Data<"user/message">, ctx);
    case "assistant/message":
      return assistantMessage(event, data as Data<"assistant/message">);
    case "tool/result":
      return toolResult(event, data as Data<"tool/result">);
    case "agent/inbox/inserted":
      return inboxInserted(event, data as Data<"agent/inbox/inserted">, ctx);
    case "subagent/start":
      return subagentStart(event, data as Data<"subagent/start">, ctx);
    case "subagent/end":
      return subagentEnd(event, data as Data<"subagent/end">, ctx);
    case "subagent/remote": {
      const d = data as Data<"subagent/remote">;
      const where =
        d.kind === "acp"
          ? "the ACP agent's session"
          : d.kind === "a2a"
            ? "the A2A agent's task"
            : "the remote deployment's session";
      return entry(event, "lifecycle remote", "Subagent's counterpart", [
        h(
          "p",
          {},
          `run ${shortId(d.runId)} is ${where} `,
          h("code", { "data-remote-id": d.remoteId }, d.remoteId),
        ),
      ]);
    }
    case "turn/end":
      return turnEnd(event, data as Data<"turn/end">);
    case "context/compacted":
      return compacted(event, data as Data<"context/compacted">);
    case "approval/requested":
      return approvalRequested(event, data as Data<"approval/requested">, ctx);
    case "approval/decided":
      return approvalDecided(event, data as Data<"approval/decided">, ctx);
    case "schedule/created":
      return scheduleCreated(event, data as Data<"schedule/created">);
    case "schedule/deleted": {
      const d = data as Data<"schedule/deleted">;
      return entry(
        event,
        "schedule deleted",
        ["Schedule deleted"],
        [h("p", {}, h("code", {}, d.scheduleId), ` · ${d.reason}`)],
        { "data-schedule-id": d.scheduleId },
      );
    }
    case "agent/inbox/discarded": {
      const d = data as Data<"agent/inbox/discarded">;
      return entry(event, "marker", "discarded", [`a queued message was discarded: ${d.reason}`]);
    }
    case "session/end-seed":
      return entry(event, "marker", "context", ["inherited context ends here"]);
    case "mcp/call": {
      const d = data as Data<"mcp/call">;
      return entry(event, "tool mcp", "MCP client", [
        h("code", {}, `${d.name}(${json(d.args).slice(0, 300)})`),
      ]);
    }
    case "mcp/result": {
      const d = data as Data<"mcp/result">;
      return entry(event, d.isError ? "tool mcp error" : "tool mcp", `MCP result: ${d.name}`, [
        text(d.content),
      ]);
    }
    case "outbox/dead-letter": {
      const d = data as Data<"outbox/dead-letter">;
      return entry(event, "warning", "undelivered", [
        `a ${d.kind} to ${shortId(d.target)} failed after ${d.attempts} attempts: ${d.error}`,
      ]);
    }
    default:
      return entry(event, "marker", event.type, [h("code", {}, json(data).slice(0, 300))]);
  }
}

function entry(
  event: SessionEvent,
  kind: string,
  title: Child | Child[],
  body: Child[],
  extra = {},
): HTMLElement {
  return h(
    "article",
    { class: `entry ${kind}`, "data-event-type": event.type, "data-seq": event.seq, ...extra },
    h(
      "header",
      {},
      h("span", { class: "who" }, title),
      h("time", { title: `seq ${event.seq}` }, clock(event.at)),
    ),
    h("div", { class: "body" }, ...body),
  );
}

function sessionLink(id: string, ctx: RenderContext): HTMLElement {
  const label = ctx.labelOf(id);
  return h(
    "button",
    { type: "button", class: "link session-link", "data-child-id": id, onclick: () => ctx.select(id) },
    label ? `${label} (${shortId(id)})` : shortId(id),
  );
}

function sourceTitle(source: MessageSource, ctx: RenderContext): { kind: string; title: Child[] } {
  switch (source.kind) {
    case "user":
      return { kind: "user", title: ["User"] };
    case "coordinator":
      return {
        kind: "coordinator",
        title: ["Coordinator relay from ", sessionLink(source.senderSessionId, ctx)],
      };
    case "subagent-report":
      return { kind: "report", title: ["Report from subagent ", sessionLink(source.senderSessionId, ctx)] };
    case "subagent-settled":
      return {
        kind: "settled",
        title: ["Settlement notice from ", sessionLink(source.senderSessionId, ctx)],
      };
    case "schedule":
      return {
        kind: "scheduled",
        title: ["Scheduled message, due ", moment(source.at), ` (${source.scheduleId})`],
      };
    default:
      return { kind: "user", title: [String((source as { kind?: unknown }).kind ?? "message")] };
  }
}

function userMessage(event: SessionEvent, d: Data<"user/message">, ctx: RenderContext): HTMLElement {
  const { kind, title } = sourceTitle(d.source, ctx);
  const el = entry(
    event,
    `message ${kind}`,
    h("span", {}, ...title),
    [h("p", { class: "text" }, text(d.content))],
    {
      "data-source": d.source.kind,
    },
  );
  return el;
}

function assistantMessage(event: SessionEvent, d: Data<"assistant/message">): HTMLElement {
  const said = text(d.content);
  const calls = (d.toolCalls ?? []).map((call) =>
    h(
      "div",
      { class: "tool-call", "data-tool": call.name },
      h("span", { class: "tool-name" }, `→ ${call.name}`),
      h("pre", {}, json(call.args)),
    ),
  );
  const stop = d.stopReason === "end" || d.stopReason === "tool-use" ? null : ` (${d.stopReason})`;
  return entry(
    event,
    "message assistant",
    ["Assistant", stop],
    [said ? h("p", { class: "text" }, said) : null, ...calls],
  );
}

function toolResult(event: SessionEvent, d: Data<"tool/result">): HTMLElement {
  return entry(
    event,
    `tool-result${d.isError ? " error" : ""}`,
    [`Tool result: ${d.name}`, d.isError ? " (error)" : null],
    [h("pre", {}, text(d.content)), d.structured === undefined ? null : h("pre", {}, json(d.structured))],
  );
}

function inboxInserted(
  event: SessionEvent,
  d: Data<"agent/inbox/inserted">,
  ctx: RenderContext,
): HTMLElement | null {
  if (d.source.kind === "user") return null; // the user/message that follows shows it
  const { kind, title } = sourceTitle(d.source, ctx);
  const lane = d.lane === "next-step" ? "next step" : "next turn";
  return entry(
    event,
    `queued ${kind}`,
    ["Queued: ", ...title],
    [h("span", { class: "muted" }, `delivered at the ${lane}${d.waking ? "; wakes the session" : ""}`)],
  );
}

function subagentStart(event: SessionEvent, d: Data<"subagent/start">, ctx: RenderContext): HTMLElement {
  return entry(
    event,
    "lifecycle start",
    ["Subagent started"],
    [
      h(
        "p",
        {},
        sessionLink(d.id, ctx),
        ` via ${d.provider}${d.local ? "" : " (remote)"} · run ${shortId(d.runId)}`,
      ),
    ],
  );
}

function subagentEnd(event: SessionEvent, d: Data<"subagent/end">, ctx: RenderContext): HTMLElement {
  const last = text(d.lastAssistantMessage);
  return entry(
    event,
    `lifecycle end stop-${d.stopReason}`,
    ["Subagent ended: ", d.stopReason],
    [
      h("p", {}, sessionLink(d.id, ctx), ` via ${d.provider} · run ${shortId(d.runId)}`),
      last ? h("p", { class: "text quote" }, last) : null,
    ],
  );
}

function turnEnd(event: SessionEvent, d: Data<"turn/end">): HTMLElement {
  const detail = [d.code ?? "", d.cause ? `cause: ${d.cause}` : "", d.error ?? ""]
    .filter(Boolean)
    .join(" · ");
  return entry(
    event,
    `marker turn-end reason-${d.reason}`,
    [`Turn ${d.turn} ${d.reason}`],
    [detail ? h("span", { class: "muted" }, detail) : null],
    { "data-code": d.code },
  );
}

/**
 * Where the model's view was compacted: the trigger, the estimated size of the view before and
 * after, the summarizing call's usage, and the summary the model sees from here on (folded). The
 * events above stay in the transcript: the log keeps them, only the model no longer sees them.
 */
function compacted(event: SessionEvent, d: Data<"context/compacted">): HTMLElement {
  const usage = d.usage
    ? ` · summary call ${count(d.usage.inputTokens)} in / ${count(d.usage.outputTokens)} out`
    : "";
  return entry(
    event,
    `marker compaction trigger-${d.trigger}`,
    [`context compacted (${d.trigger})`],
    [
      h(
        "p",
        { class: "figures" },
        `${count(d.tokensBefore)} → ${count(d.tokensAfter)} tokens (estimated)${usage}`,
      ),
      h(
        "details",
        { class: "compaction-summary" },
        h(
          "summary",
          {},
          // -1: a fork child's seed, the parent's view rather than events of this log
          d.throughSeq < 0
            ? "summary of the inherited conversation"
            : `summary of the conversation through seq ${d.throughSeq}`,
        ),
        h("p", { class: "text" }, d.summary),
      ),
    ],
    {
      "data-trigger": d.trigger,
      "data-through-seq": d.throughSeq,
      "data-tokens-before": d.tokensBefore,
      "data-tokens-after": d.tokensAfter,
    },
  );
}

/**
 * A tool call waiting for a decision, in the asking session's log and every ancestor's. The
 * `.approval-slot` holds Approve / Deny while the approval is pending in the tree's list (the
 * transcript fills and empties it); `data-asking-session` is the session that asked (only an
 * element that shows a session, with its status, carries `data-session-id`).
 */
function approvalRequested(
  event: SessionEvent,
  d: Data<"approval/requested">,
  ctx: RenderContext,
): HTMLElement {
  return entry(
    event,
    "approval requested",
    ["Approval asked: ", h("code", {}, d.tool)],
    [
      h("p", {}, "asked by ", sessionLink(d.sessionId, ctx), ` · call ${shortId(d.toolCallId)}`),
      h("pre", { class: "approval-args" }, json(d.args)),
      h("div", { class: "approval-slot" }),
    ],
    {
      "data-approval-id": d.approvalId,
      "data-asking-session": d.sessionId,
      "data-tool": d.tool,
      "data-tool-call-id": d.toolCallId,
    },
  );
}

/** How an approval ended: the decision, the reason if one was given, and by whom ("admin" or a session's path). */
function approvalDecided(event: SessionEvent, d: Data<"approval/decided">, ctx: RenderContext): HTMLElement {
  return entry(
    event,
    `approval decided decision-${d.decision}`,
    [d.decision === "approve" ? "Approved" : "Denied", ` · approval ${shortId(d.approvalId)}`],
    [
      h("p", {}, "by ", d.by === "admin" ? "admin" : sessionLink(d.by, ctx)),
      d.reason ? h("p", { class: "text quote approval-reason" }, d.reason) : null,
    ],
    { "data-approval-id": d.approvalId, "data-decision": d.decision, "data-by": d.by },
  );
}

/**
 * A message that will arrive later: every time of a cron in a time zone (a recurring schedule,
 * listed in the schedules panel until deleted), or once (`messageId`: a message sent with
 * `notBefore`, or the model's `schedule_message` with a delay). `by`: a caller or the model.
 */
function scheduleCreated(event: SessionEvent, d: Data<"schedule/created">): HTMLElement {
  const by = d.by === "model" ? " by the model" : "";
  const recurring = d.cron !== undefined;
  return entry(
    event,
    `schedule created ${recurring ? "recurring" : "once"}`,
    [recurring ? "Schedule created" : "Message scheduled", by],
    recurring
      ? [
          h(
            "p",
            {},
            "every ",
            h("code", { class: "cron" }, d.cron),
            ` (${d.timezone ?? "UTC"}) · first `,
            moment(d.next),
          ),
          h("p", { class: "muted" }, h("code", {}, d.scheduleId)),
        ]
      : [
          h(
            "p",
            {},
            "delivered ",
            moment(d.next),
            d.messageId ? ` · message ${shortId(d.messageId.replace(/^msg_/, ""))}` : "",
          ),
        ],
    { "data-schedule-id": d.scheduleId, "data-next": d.next, "data-cron": d.cron, "data-by": d.by },
  );
}

/** A time ahead as a person reads it (local), the exact instant in its title. */
function moment(at: number): HTMLElement {
  const iso = new Date(at).toISOString();
  return h("time", { class: "moment", datetime: iso, title: iso }, dateTime(at));
}

function count(n: number): string {
  return n.toLocaleString();
}
