import type { Descriptor } from "./descriptor";
import type { JsonValue } from "./json";
import type { ContentBlock } from "./content";
import type { TraceContext } from "./trace";

/**
 * The event catalogue of a session log. Every state change of a session appends one of these in
 * the same transaction as the change; the log is append-only with contiguous `seq` from 0.
 */

/**
 * Who a message comes from: attribution only, never authority. `trace`: the span that caused it
 * (a caller's `traceparent`, the tool call that sent it), whose trace the turn it starts joins.
 * `mcpFace`: made by a call through an MCP face, or sent by a session below one; the session that
 * takes it in is below the face from then on (README "Approvals").
 */
export type MessageSource = MessageOrigin & { trace?: TraceContext; mcpFace?: true };

type MessageOrigin =
  | { kind: "user" }
  | { kind: "coordinator"; form: "relay"; senderSessionId: string }
  | { kind: "subagent-report"; form: "relay"; senderSessionId: string }
  | { kind: "subagent-settled"; form: "notice"; summary: string; senderSessionId: string }
  /** A firing of a schedule (`at`: its firing time, epoch ms) or a model's `schedule_message`. */
  | { kind: "schedule"; scheduleId: string; at: number };

export type InboxLane = "next-turn" | "next-step";

export type ApprovalDecision = "approve" | "deny";

/**
 * How far an approve reaches: `once` (this call) or `always` (an ACP agent's allow-always
 * option: the agent may do the like again without asking).
 */
export type ApprovalScope = "once" | "always";

/** What made a session compact its model view: the threshold, a refused request, or a caller. */
export type CompactionTrigger = "threshold" | "overflow" | "request";

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
  /**
   * What the tokens cost in US dollars, at the deployment's MODEL_PRICES when they were used
   * (README "Prices and budgets"); absent for a route with no price (never a made-up zero). A sum
   * counts the priced part of its addends.
   */
  costUsd?: number;
}

/** What a budget counts of some usage: its tokens (input plus output) and its cost in dollars. */
export interface Spend {
  tokens: number;
  usd: number;
}

export interface EventData {
  "agent/inbox/inserted": { messageId: string; lane: InboxLane; waking: boolean; source: MessageSource };
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
     * log reached MAX_LOG_BYTES, `CONTEXT_OVERFLOW` when the model refused the step's request as
     * too long even after a compaction (later views carry that turn's large items cut).
     */
    code?: "BUDGET_EXCEEDED" | "QUOTA_EXCEEDED" | "CONTEXT_OVERFLOW";
    /** The turn's model steps' usage, summed (when the model reported any). */
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
    structured?: JsonValue;
  };
  "session/end-seed": { seedLength: number };
  "subagent/descriptor": Descriptor;
  "subagent/start": { runId: string; provider: string; id: string; local: boolean };
  "subagent/end": {
    runId: string;
    provider: string;
    id: string;
    local: boolean;
    stopReason: string;
    lastAssistantMessage?: ContentBlock[];
    /** The child's usage for this run or epoch, as its result reported it. */
    usage?: Usage;
  };
  /**
   * An out-of-process run's counterpart: the session the remote deployment made for it, the ACP
   * agent's session, or the A2A agent's task (recorded once it exists; the dashboard shows it).
   */
  "subagent/remote": { runId: string; kind: "remote" | "acp" | "a2a"; remoteId: string };
  /** A tool call an MCP client made on this session (POST /v1/sessions/:id/mcp), not the model. */
  /** `trace`: the MCP client's `_meta.traceparent`, when it sent one (the call's span joins its trace). */
  "mcp/call": { callId: string; name: string; args: JsonValue; trace?: TraceContext };
  /** The result an MCP client's call got. */
  "mcp/result": { callId: string; name: string; content: ContentBlock[]; isError: boolean };
  /**
   * One of the session's `mcpServers` could not be listed (down, refusing its token, a protocol
   * error): once per failure streak, with a short diagnostic that never carries the token.
   */
  "mcp/server-unavailable": { server: string; error: string };
  /**
   * The model's view was compacted: from now on it holds `summary` in place of every conversation
   * event up to `throughSeq` (the log keeps them all). `throughSeq` is -1 in a fork child's seed,
   * whose summary stands for its parent's earlier turns. `tokensBefore`/`tokensAfter` are the
   * view's estimated size; `usage` is the summarizing call's, when the model reported it.
   */
  "context/compacted": {
    throughSeq: number;
    summary: string;
    tokensBefore: number;
    tokensAfter: number;
    trigger: CompactionTrigger;
    usage?: Usage;
  };
  /**
   * A tool call waits for a person's decision (README "Approvals"): appended by the session that
   * asked (`sessionId`) and by every ancestor it reached through the outbox.
   */
  "approval/requested": {
    approvalId: string;
    sessionId: string;
    toolCallId: string;
    tool: string;
    args: JsonValue;
    requestedAt: number;
    /**
     * Raised by a call made through a session's MCP face, or in a session such a call started
     * (at any depth): no MCP client's `decide_approval` decides it.
     */
    mcpFace?: true;
    /**
     * The scopes an approve can take, where it is not `once` alone: an ACP agent's permission
     * request offers its allow options (`[]`: none, only deny answers it).
     */
    scopes?: ApprovalScope[];
  };
  /**
   * How an approval ended: `by` is "admin" or the session whose path the decision came through;
   * `via` "mcp-elicitation": the person at the MCP client that made the call answered its
   * elicitation form. `scope` "always": an approve that picked an ACP agent's allow-always option.
   */
  "approval/decided": {
    approvalId: string;
    decision: ApprovalDecision;
    reason?: string;
    by: string;
    via?: "mcp-elicitation";
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
  /** A recurring schedule was deleted (`reason`: by whom, or the session's deletion). */
  "schedule/deleted": { scheduleId: string; reason: string };
  "outbox/dead-letter": { outboxId: string; target: string; kind: string; attempts: number; error: string };
}

export type EventType = keyof EventData;

export interface SessionEvent<T extends EventType = EventType> {
  seq: number;
  type: T;
  at: number;
  data: EventData[T];
}

/** Events that make up the model-visible conversation. */
export const CONVERSATION_EVENTS = ["user/message", "assistant/message", "tool/result"] as const;
