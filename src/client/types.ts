/**
 * Wire types of the public HTTP API (see the README), as a client sees them.
 * Written out here rather than imported from the runtime so the SDK stands alone (no zod, no
 * Worker types); test/workers/client/sdk.test.ts checks at compile time that they stay assignable
 * to and from the runtime's contract types.
 */

// ---- content and events -------------------------------------------------------------------

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

// ---- sessions -----------------------------------------------------------------------------

export type SessionStatus = "running" | "waiting" | "idle";
export type ChildMode = "one-shot" | "continuable";

export interface ToolFilter {
  allow?: string[];
  deny?: string[];
}

/** Where a session's object may be first created (a hint only). */
export type LocationHint = "wnam" | "enam" | "weur" | "eeur" | "apac" | "oc" | "afr" | "me" | "sam";
/** Where a session's object runs and stores data, for good; its children inherit it. */
export type Jurisdiction = "eu" | "fedramp";

export interface Placement {
  jurisdiction?: Jurisdiction;
  locationHint?: LocationHint;
}

/** Sampling parameters of a session's model calls (children inherit them). */
export interface ModelParams {
  /** 0 to 2. */
  temperature?: number;
  /** 1 to 1,000,000 output tokens per model step. */
  maxOutputTokens?: number;
  /** The context window in tokens the session's model view is kept within (children inherit it). */
  contextWindow?: number;
}

/** Which tool calls wait for a person's decision, and for how long (children add to the list). */
export interface ApprovalOptions {
  /** Tool names, or prefixes ending in `*`. */
  requireApproval?: string[];
  /** An approval still pending this long is denied. */
  approvalTimeoutSeconds?: number;
}

export type ApprovalDecision = "approve" | "deny";

/**
 * How far an approve reaches: `once` (this call) or `always` (an ACP agent's allow-always option:
 * the agent may do the like again without asking).
 */
export type ApprovalScope = "once" | "always";

/**
 * How a message joins a session's work: `next-turn` (default: a later turn), `next-step` (the
 * running turn's model reads it before its next step), `interrupt` (the running turn ends and
 * this message is the next turn).
 */
export type MessageDelivery = "next-turn" | "next-step" | "interrupt";

/**
 * An entry of `GET /v1/sessions/:id/schedules`: a recurring schedule (`kind: "cron"`) or a message
 * held for its time (`kind: "message"`: sent with `notBefore`, or the model's `schedule_message`
 * with a delay). `DELETE …/schedules/:scheduleId` removes either.
 */
export type Schedule = CronSchedule | HeldMessage;

export interface CronSchedule {
  scheduleId: string;
  kind: "cron";
  /** Five fields: minute hour day-of-month month day-of-week. */
  cron: string;
  /** An IANA time zone name. */
  timezone: string;
  /** Epoch ms of the next firing. */
  next: number;
  /** As it was given. */
  content: Content;
}

export interface HeldMessage {
  scheduleId: string;
  kind: "message";
  /** Epoch ms it is delivered at. */
  next: number;
  /** As it was given. */
  content: Content;
  /** The id its sender was given at acceptance (the message's id once delivered). */
  messageId: string;
  delivery: MessageDelivery;
}

/** A pending approval of `GET /v1/sessions/:id/approvals` (the session's own and its descendants'). */
export interface PendingApproval {
  approvalId: string;
  /** The session that asked. */
  sessionId: string;
  tool: string;
  args: unknown;
  toolCallId: string;
  requestedAt: number;
  /**
   * The scopes an approve can take, where it is not `once` alone: an ACP agent's permission
   * request offers its allow options (`["always"]`: only `decide(…, {scope: "always"})` approves it).
   */
  scopes?: ApprovalScope[];
}

export interface CreateSessionRequest extends Placement, ModelParams, ApprovalOptions {
  model?: string;
  /**
   * What the session's tree may spend: tokens (input plus output) and/or US dollars (at the
   * deployment's MODEL_PRICES); every session below it draws from the same remainder.
   */
  budget?: { tokens?: number; usd?: number };
  /** MCP servers whose tools the model gets as `mcp__<name>__<tool>` (children inherit them). */
  mcpServers?: McpServerSpec[];
  persona?: string;
  toolFilter?: ToolFilter;
  label?: string;
  providers?: string[];
  backgroundMode?: ChildMode;
  reportDelivery?: "quiet" | "next-step" | "wakeup";
  /** Same key (and same body) again: the same session, answered without a token. */
  idempotencyKey?: string;
  /** Where the session posts its first turn's result, signed with `secret` (remote delegation). */
  callback?: { url: string; secret: string };
  /** Depth of this session in a delegation tree that started on another deployment. */
  delegationDepth?: number;
}

export interface SessionView extends Placement {
  id: string;
  parentSession: string | null;
  origin: "subagent" | null;
  delegationDepth: number;
  seedLength?: number;
  createdAt: number;
  status: SessionStatus;
  mode?: ChildMode;
  label?: string;
  model: string;
  lastSeq: number;
  /** The tokens this session's own model calls used, compactions included. */
  usage?: Usage;
  /** The part of `usage` its compactions' summarizing calls used. */
  compactionUsage?: Usage;
  /**
   * Its tree's total: its own usage plus what its local children reported of their subtrees as
   * their runs and epochs ended (a child at work adds its part when that run or epoch ends).
   */
  subtreeUsage?: Usage;
  /**
   * Its tree's budget and what counts against it so far: `used` in tokens, `usedUsd` in dollars;
   * `shared` on a session below the one created with it.
   */
  budget?: { tokens?: number; usd?: number; used: number; usedUsd?: number; shared?: true };
  /** Its MCP servers (names and urls; tokens are never shown). */
  mcpServers?: { name: string; url: string }[];
}

/**
 * `POST /v1/sessions`: the session and its token (shown once; keep it). An idempotent replay
 * (same `idempotencyKey` and body) answers the same session without a token.
 */
export type CreatedSession = SessionView & { token: string };

export interface DirectoryEntry extends Placement {
  id: string;
  createdAt: number;
  label?: string;
}

export interface SessionPage {
  sessions: DirectoryEntry[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  next: string | null;
}

// ---- providers ----------------------------------------------------------------------------

export interface ProviderCapabilities {
  outputSchema: boolean;
  depthLimit: boolean;
  toolFilter: boolean;
  persona: boolean;
}

export interface ProviderInfo {
  name: string;
  kind: "spawn" | "fork" | "remote" | "acp" | "a2a";
  capabilities: ProviderCapabilities;
  inheritsParentContext: boolean;
  continuable: boolean;
  local: boolean;
  /** Where the other side lives: shown to the deployment admin only. */
  url?: string;
  /** The tenants that may use it (`["*"]`: all): shown to the deployment admin only. */
  tenants?: string[];
}

/** `tenants`: who may use the provider, tenant names or `["*"]` (default `["default"]`). */
export type RegisterProviderRequest =
  | { kind: "remote"; url: string; token?: string; tenants?: string[] }
  | { kind: "acp"; url: string; token?: string; tenants?: string[] }
  | { kind: "a2a"; url: string; token?: string; tenants?: string[] }
  | { kind: "spawn"; tenants?: string[] }
  | { kind: "fork"; tenants?: string[] };

export interface ProviderEvent {
  seq: number;
  type: "subagent/provider-added" | "subagent/provider-removed";
  at: number;
  data: { name: string; provider?: ProviderInfo; tenants?: string[] };
}

export interface ProviderEventPage {
  events: ProviderEvent[];
  next: number | null;
}

// ---- delegation ---------------------------------------------------------------------------

/** An MCP server of a session; its token is write-only. */
export interface McpServerSpec {
  name: string;
  url: string;
  token?: string;
}

interface StartCommon extends Placement, ModelParams, ApprovalOptions {
  mcpServers?: McpServerSpec[];
  /** A one-shot run ends `aborted` this long after its acceptance; a continuable child's turn, after it started. */
  deadlineSeconds?: number;
  provider: string;
  prompt: Content;
  /**
   * Reserves the child under this parent (a UUID): the child's id is derived from the parent's id
   * and this one (the answer names it), and the same request again gets the same child.
   */
  childId?: string;
  model?: string;
  maxDepth?: number;
  toolFilter?: ToolFilter;
  persona?: string;
}

export interface StartOneShotRequest extends StartCommon {
  label?: string;
  outputSchema?: Record<string, unknown>;
}

export interface StartContinuableRequest extends StartCommon {
  label: string;
}

export interface StartedRun {
  runId: string;
  id: string;
  local: boolean;
}

export interface StartedChild {
  /** The child's session id (for a reserved `childId`, the id derived from it under the parent). */
  childId: string;
  messageId: string;
}

export type SubagentStopReason = TurnEndReason;

export interface SubagentResult {
  output: ContentBlock[];
  structured?: unknown;
  stopReason: SubagentStopReason;
  diagnostic?: string;
  /** The tokens the child's model steps used for this run. */
  usage?: Usage;
}

export interface RunView {
  runId: string;
  id: string;
  provider: string;
  local: boolean;
  state: "running" | "settled";
  result?: SubagentResult;
  taskId?: string;
  /** An out-of-process run's far side, once it exists: the remote session, ACP session or A2A task. */
  counterpart?: { kind: "remote" | "acp" | "a2a"; id: string };
}

/** A row of `children` / `descendants`: a child, or a diagnostic for one that cannot be read. */
export type ChildEntry =
  | {
      kind: "child";
      id: string;
      activity: "running" | "inactive";
      hasChildren: boolean;
      mode: ChildMode;
      label?: string;
      status: SessionStatus;
      provider: string;
      createdAt: number;
      jurisdiction?: Jurisdiction;
      locationHint?: LocationHint;
      /** The tokens this session's own model steps used. */
      usage?: Usage;
    }
  | { kind: "diagnostic"; id: string; reason: "corrupt" | "unavailable" | "unsupported"; createdAt: number };

/**
 * A descendant row in stable pre-order, with its parent and its depth below the listed session;
 * `subtreeUsage` sums its own usage and that of the rows below it.
 */
export type DescendantEntry = ChildEntry & { parentId: string; depth: number; subtreeUsage?: Usage };

/**
 * `GET /v1/sessions/:id/descendants` as a whole: the rows, and `subtreeUsage`, the tree's total
 * (the listed session's own usage plus every row's, as the listing read them).
 */
export interface DescendantListing {
  entries: DescendantEntry[];
  subtreeUsage?: Usage;
}

/** A message this session sent or is sending to another session (dead letters included). */
export interface OutboxEntry {
  id: string;
  target: string;
  kind: string;
  attempts: number;
  state: "pending" | "delivered" | "dead";
  lastError?: string;
}

export interface Health {
  ok: true;
  version: string;
}

/** Joins content to plain text. */
export function textOf(content: Content | readonly ContentBlock[]): string {
  return typeof content === "string" ? content : content.map((b) => b.text).join("");
}
