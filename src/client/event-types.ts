import type { ApprovalScope } from "./approval-types";
/**
 * Wire types of a session's content and its log (README "Events"), as a client sees them: text
 * blocks, trace context, tool calls, usage, live text and every log event type with its data.
 */

export interface TextBlock {
  type: "text";
  text: string;
}
export type ContentBlock = TextBlock;
/** Message content on the wire: a string, or an array of text blocks. */
export type Content = string | TextBlock[];

/** A trace and the span in it that caused something (W3C trace context, README "Traces"). */
export interface TraceContext {
  traceId: string;
  parentSpanId?: string;
}

/**
 * Who a message comes from (attribution only, never authority); `trace`: the span that caused it,
 * whose trace the turn it starts joins.
 */
export type MessageSource = MessageOrigin & { trace?: TraceContext; mcpFace?: true };

type MessageOrigin =
  | { kind: "user" }
  | { kind: "coordinator"; form: "relay"; senderSessionId: string }
  | { kind: "subagent-report"; form: "relay"; senderSessionId: string }
  | { kind: "subagent-settled"; form: "notice"; summary: string; senderSessionId: string }
  /** A firing of a schedule (`at`: its firing time, epoch ms) or a model's `schedule_message`. */
  | { kind: "schedule"; scheduleId: string; at: number };

export type TurnEndReason = "completed" | "aborted" | "error" | "max-tokens" | "refusal";

export interface ToolCall {
  id: string;
  name: string;
  args: unknown;
}

/** Tokens one model step (or a sum of steps) used, as the provider reported them. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens read from the provider's prompt cache (part of `inputTokens`). */
  cachedInputTokens?: number;
  /** Output tokens spent on reasoning (part of `outputTokens`). */
  reasoningTokens?: number;
  /** What they cost in US dollars at the deployment's MODEL_PRICES (absent: the model has no price). */
  costUsd?: number;
}

/**
 * A live text delta of a streaming model step (`events/stream?deltas=true` only): no `seq`, never
 * logged; the step's `assistant/message` follows. A retried step starts over with the next `attempt`.
 */
export interface TextDelta {
  type: "assistant/delta";
  turn: number;
  step: number;
  attempt: number;
  text: string;
}

/** The data of each known log event type. */
export interface EventData {
  "agent/inbox/inserted": {
    messageId: string;
    lane: "next-turn" | "next-step";
    waking: boolean;
    source: MessageSource;
  };
  "agent/inbox/claimed": { messageId: string; turn: number };
  "agent/inbox/discarded": { messageId: string; reason: string };
  "turn/start": { turn: number };
  "turn/end": {
    turn: number;
    reason: TurnEndReason;
    cause?: string;
    error?: string;
    /**
     * `BUDGET_EXCEEDED` when the session's token budget ended the turn, `QUOTA_EXCEEDED` when its
     * log reached MAX_LOG_BYTES.
     */
    code?: "BUDGET_EXCEEDED" | "QUOTA_EXCEEDED" | "CONTEXT_OVERFLOW";
    /** The turn's model usage, summed. */
    usage?: Usage;
  };
  "user/message": { messageId: string; content: ContentBlock[]; source: MessageSource };
  "assistant/message": {
    content: ContentBlock[];
    toolCalls?: ToolCall[];
    stopReason: "end" | "tool-use" | "max-tokens" | "refusal";
    usage?: Usage;
    model: string;
  };
  "tool/result": {
    toolCallId: string;
    name: string;
    content: ContentBlock[];
    isError: boolean;
    structured?: unknown;
  };
  "session/end-seed": { seedLength: number };
  "subagent/descriptor": Record<string, unknown>;
  "subagent/start": { runId: string; provider: string; id: string; local: boolean };
  "subagent/end": {
    runId: string;
    provider: string;
    id: string;
    local: boolean;
    stopReason: string;
    lastAssistantMessage?: ContentBlock[];
    usage?: Usage;
  };
  /** An out-of-process run's counterpart: the remote deployment's session or the ACP agent's session. */
  "subagent/remote": { runId: string; kind: "remote" | "acp" | "a2a"; remoteId: string };
  /** A tool call an MCP client made on this session (not the model). */
  "mcp/call": { callId: string; name: string; args: unknown; trace?: TraceContext };
  /** The result an MCP client's call got. */
  "mcp/result": { callId: string; name: string; content: ContentBlock[]; isError: boolean };
  /** One of the session's MCP servers could not be listed (once per failure streak; never its token). */
  "mcp/server-unavailable": { server: string; error: string };
  /**
   * The model's view was compacted: `summary` replaces every conversation event up to `throughSeq`
   * in what the model sees (the log keeps them all; -1 in a fork child's seed). Token figures are
   * estimates; `usage` is the summarizing call's.
   */
  "context/compacted": {
    throughSeq: number;
    summary: string;
    tokensBefore: number;
    tokensAfter: number;
    trigger: "threshold" | "overflow" | "request";
    usage?: Usage;
  };
  /** A tool call waits for a person's decision (in the asking session's log and every ancestor's). */
  "approval/requested": {
    approvalId: string;
    sessionId: string;
    toolCallId: string;
    tool: string;
    args: unknown;
    requestedAt: number;
    /** The scopes an approve can take, where it is not `once` alone (an ACP agent's permission request). */
    scopes?: ApprovalScope[];
  };
  /**
   * How an approval ended: `by` is "admin" or the session whose path the decision came through;
   * `scope` "always": an approve that picked an ACP agent's allow-always option.
   */
  "approval/decided": {
    approvalId: string;
    decision: "approve" | "deny";
    reason?: string;
    by: string;
    scope?: "always";
  };
  /**
   * A message will arrive later (README "Schedules"): once at `next` (`messageId`: a message sent
   * with `notBefore`), or at every time of `cron` in `timezone`.
   */
  "schedule/created": {
    scheduleId: string;
    next: number;
    cron?: string;
    timezone?: string;
    messageId?: string;
    /** Who made it: a caller of the API (or RPC), or the session's own model (`schedule_message`). */
    by: "caller" | "model";
  };
  /**
   * A recurring schedule or a held message was deleted (`reason`: by whom, the session's deletion,
   * or the end of a one-shot child's run).
   */
  "schedule/deleted": { scheduleId: string; reason: string };
  "outbox/dead-letter": { outboxId: string; target: string; kind: string; attempts: number; error: string };
}

export type EventType = keyof EventData;

/** One log event. `seq` starts at 0 and is contiguous within a session. */
export interface SessionEvent<T extends EventType = EventType> {
  seq: number;
  type: T;
  at: number;
  data: EventData[T];
}

/** Narrows an event to one type. */
export function isEvent<T extends EventType>(event: SessionEvent, type: T): event is SessionEvent<T> {
  return event.type === type;
}

export interface EventPage {
  events: SessionEvent[];
  /** Pass as `after` for the next page; null on the last page. */
  next: number | null;
}

/** Joins content to plain text. */
export function textOf(content: Content | readonly ContentBlock[]): string {
  return typeof content === "string" ? content : content.map((b) => b.text).join("");
}
