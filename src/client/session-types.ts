import type { ApprovalOptions } from "./approval-types";
import type { Content, Usage } from "./event-types";
/**
 * Wire types of sessions, as a client sees them: creating one (placement, model parameters, MCP
 * servers), its view and listing, message delivery and schedules.
 */

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

/** An MCP server of a session; its token is write-only. */
export interface McpServerSpec {
  name: string;
  url: string;
  token?: string;
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
