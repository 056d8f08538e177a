import type { Usage } from "./events";
import type { ToolFilter } from "./tool-filter";
import type { Jurisdiction, LocationHint } from "./placement";

/** The durable identity of a session: written once (by `create` or `init`), never rewritten. */
export interface SessionHeader {
  id: string;
  parentSession: string | null;
  origin: "subagent" | null;
  delegationDepth: number;
  seedLength?: number;
  createdAt: number;
  label?: string;
  mode?: "one-shot" | "continuable";
  /** SHA-256 of the root session's token; descendants carry their root's hash for read-only views. */
  tokenHash: string | null;
  /** Ancestor ids, root first; empty for a top-level session. */
  lineage: string[];
  /** The tenant that owns this tree; another tenant's admin gets 404 (absent: `default`). */
  tenant?: string;
  options: AgentOptions;
  /** For a one-shot child: the run it answers and how. */
  oneShot?: { runId: string; provider: string; outputSchema?: Record<string, unknown> };
  /** Where the object lives (core/placement.ts): a jurisdiction is inherited and never left. */
  jurisdiction?: Jurisdiction;
  locationHint?: LocationHint;
  /**
   * A session created for another deployment (remote delegation): where its first turn's result
   * is posted, signed with `secret`. Never returned, never logged, never inherited.
   */
  callback?: { url: string; secret: string };
  /** SHA-256 of the creation's idempotency key and body: the same create again is this session. */
  createKey?: string;
  /**
   * Below an MCP face: started by a call made through a session's MCP face or by a session below
   * one (inherited), or, since, it took in a message such a call made or such a session sent
   * (durable-objects/store/approvals.ts `markBelowMcpFace`). Every approval it raises is one no MCP
   * client decides (README "Approvals").
   */
  belowMcpFace?: true;
}

export interface AgentOptions {
  model: string;
  persona?: string;
  toolFilter?: ToolFilter;
  /** Providers the session's model may delegate to (one `subagent` tool per name); all when absent. */
  providers?: string[];
  /** What the `subagent` tool's `run_in_background` starts (default `continuable`). */
  backgroundMode?: "one-shot" | "continuable";
  /** How this session's `report` tool delivers (default `next-step`). */
  reportDelivery?: "quiet" | "next-step" | "wakeup";
  /** Sampling temperature for every model step (children inherit it unless their start says otherwise). */
  temperature?: number;
  /** Output token cap of one model step (inherited like `temperature`). */
  maxOutputTokens?: number;
  /**
   * The context window in tokens its model view is kept within (inherited like `temperature`);
   * absent: the model route's own, else DEFAULT_CONTEXT_WINDOW (README "Long sessions").
   */
  contextWindow?: number;
  /**
   * What its tree may spend: tokens (input plus output) and/or US dollars (at MODEL_PRICES), over
   * the model calls of every session in its local tree and the runs they start on other
   * deployments and agents (README "Prices and budgets", semantics.md §8). `owner`: the session
   * that holds the tree's figures (set on the sessions below it; absent on the owner itself).
   */
  budget?: { tokens?: number; usd?: number; owner?: string };
  /** MCP servers whose tools the model gets as `mcp__<name>__<tool>` (children inherit them). */
  mcpServers?: McpServerSpec[];
  /** Tool names (or prefixes ending in `*`) whose calls wait for approval; a child adds its own. */
  requireApproval?: string[];
  /** An approval still pending this long is denied (inherited unless a start names its own). */
  approvalTimeoutSeconds?: number;
  /**
   * A continuable child's `deadlineSeconds`: each of its turns ends `aborted` once it has run
   * this long (never inherited).
   */
  turnDeadlineSeconds?: number;
}

/** A session's MCP server: its token is write-only (no view, event, listing or log shows it). */
export interface McpServerSpec {
  name: string;
  url: string;
  token?: string | undefined;
}

export type SessionStatus = "running" | "waiting" | "idle";

/** `GET /v1/sessions/:id`. */
export interface SessionView {
  id: string;
  parentSession: string | null;
  origin: "subagent" | null;
  delegationDepth: number;
  seedLength?: number;
  createdAt: number;
  status: SessionStatus;
  mode?: "one-shot" | "continuable";
  label?: string;
  model: string;
  lastSeq: number;
  jurisdiction?: Jurisdiction;
  locationHint?: LocationHint;
  /** The tokens this session's own model calls used (when its model reported any), compactions included. */
  usage?: Usage;
  /** The part of `usage` its compactions' summarizing calls used. */
  compactionUsage?: Usage;
  /**
   * Its tree's total: its own usage plus what its local children reported of their subtrees as
   * their runs and epochs ended (semantics.md §8).
   */
  subtreeUsage?: Usage;
  /**
   * Its tree's budget and what counts against it so far, as this session knows it: `used` in
   * tokens, `usedUsd` in dollars (with a budget in dollars); `shared` on a session below the one
   * that was created with it.
   */
  budget?: { tokens?: number; usd?: number; used: number; usedUsd?: number; shared?: true };
  /** Its MCP servers, without their tokens. */
  mcpServers?: { name: string; url: string }[];
}

/**
 * Who is calling, as established by the Worker from the bearer token. An admin acts for one
 * tenant (`default` for the deployment's `ADMIN_TOKEN`); a session token acts for its session.
 */
export type Caller =
  | { kind: "admin"; tenant?: string }
  | { kind: "session"; sessionId: string; tokenHash: string };

/** The header in which the Worker passes the authenticated caller (JSON) with a forwarded request. */
export const CALLER_HEADER = "x-subagents-caller";

export const DEFAULT_TENANT = "default";

/** What a tenant's name may be (`TENANT_TOKENS` values, provider `tenants`). */
export const TENANT_NAME = /^[a-z0-9-]{1,64}$/;

export function tenantOf(value: { tenant?: string | undefined }): string {
  return value.tenant ?? DEFAULT_TENANT;
}
