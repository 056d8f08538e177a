import type { ContentBlock } from "./content";
import type { EventData, Usage } from "./events";
import type { TraceContext } from "./trace";
import type { SubagentResult } from "./run";

/**
 * Messages between session objects, written to the sender's outbox in the same transaction as
 * the event that caused them and delivered with retries (reports go directly: the child's tool
 * must know whether the parent took it). `id` is the idempotency key (the receiver applies each
 * once); `v` lets the previous and the current code read each other.
 */
export type Envelope =
  | RunResultEnvelope
  | CancelRunEnvelope
  | SettledEnvelope
  | ReportEnvelope
  | CallbackEnvelope
  | ApprovalEnvelope;

interface EnvelopeBase {
  v: 1;
  id: string;
  from: string;
  to: string;
  /** Position on the sender->receiver link (outbox envelopes); the receiver applies in this order. */
  linkSeq?: number;
  /**
   * The last position below `linkSeq` that the sender knows the receiver applied (0: none), sent
   * when positions in between will never arrive (dead-lettered or withdrawn by the sender): the
   * receiver may then apply this envelope past that gap instead of waiting for it forever.
   */
  after?: number;
  /**
   * The sender is below an MCP face (SessionHeader `belowMcpFace`): what it says up (a report, a
   * settled notice, a run's result) puts its receiver below the face too (README "Approvals").
   */
  belowMcpFace?: true;
}

/** Child -> parent: the one result of a one-shot run. */
export interface RunResultEnvelope extends EnvelopeBase {
  kind: "run-result";
  runId: string;
  result: SubagentResult;
}

/** Parent -> child: cancel a one-shot run (dispose). */
export interface CancelRunEnvelope extends EnvelopeBase {
  kind: "cancel-run";
  runId: string;
  /** Why (e.g. a `task_kill` reason); recorded as the cause of the child's aborted turn. */
  reason?: string;
}

/** Continuable child -> parent: one settlement notice per epoch. */
export interface SettledEnvelope extends EnvelopeBase {
  kind: "settled";
  runId: string;
  stopReason: string;
  output: ContentBlock[];
  text: string;
  summary: string;
  /** Settled by a drain: the parent takes the notice without waking. */
  drained: boolean;
  /** What the epoch's own model steps used (the parent's `subagent/end` carries it). */
  usage?: Usage;
  /** The child's subtree usage not reported before (its parent adds it to its `subtreeUsage`). */
  subtreeUsage?: Usage;
}

export type ReportDelivery = "quiet" | "next-step" | "wakeup";

/** Continuable child -> its direct parent: a report, attributed as such (never a final answer). */
export interface ReportEnvelope extends EnvelopeBase {
  kind: "report";
  messageId: string;
  text: string;
  delivery: ReportDelivery;
  /** The `report` call's span: a parent turn the report starts joins its trace. */
  trace?: TraceContext;
}

/**
 * Child -> parent, and on up the tree: an approval a session below asked for, or how it ended.
 * Each ancestor appends the event to its own log, keeps the approval in its listing and passes
 * the envelope on to its own parent.
 */
export type ApprovalEnvelope = EnvelopeBase &
  (
    | { kind: "approval"; event: "approval/requested"; data: EventData["approval/requested"] }
    | { kind: "approval"; event: "approval/decided"; data: EventData["approval/decided"] }
  );

/** The outbox target of a callback: it leaves the deployment over HTTP, never to a session object. */
export const CALLBACK_TARGET = "callback";

/**
 * A session created for another deployment -> that deployment: its first turn's result, posted
 * (signed) to the session's callback URL. URL and secret stay in the header, not in the outbox.
 */
export interface CallbackEnvelope extends EnvelopeBase {
  kind: "callback";
  result: SubagentResult;
}

export const ENVELOPE_VERSIONS: readonly number[] = [1];
