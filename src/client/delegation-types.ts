import type { ApprovalOptions } from "./approval-types";
import type { Content, ContentBlock, TurnEndReason, Usage } from "./event-types";
import type {
  ChildMode,
  Jurisdiction,
  LocationHint,
  McpServerSpec,
  ModelParams,
  Placement,
  SessionStatus,
  ToolFilter,
} from "./session-types";
/**
 * Wire types of delegation, as a client sees them: starting a one-shot or continuable child, its
 * run and result, and the listings of children, descendants and the outbox.
 */

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
