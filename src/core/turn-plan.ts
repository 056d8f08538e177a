import type { InboxLane, ToolCall, Usage } from "../contract/events";
import type { TraceContext } from "../contract/trace";

/**
 * What the turn driver does next, derived only from durable state (so a re-run after a crash
 * makes the same decision). Pure.
 */

export interface LoopState {
  /** Bumped by every interrupt: a step that started under an older epoch may not append. */
  epoch: number;
  /** Turns started so far; the open turn's number when `openTurn` is set. */
  turns: number;
  openTurn: number | null;
  /** Seq of the open turn's `turn/start`. */
  turnStartSeq: number | null;
  /** Model calls completed in the open turn. */
  step: number;
  /**
   * Model calls begun for the current step (retries and re-runs after a restart included), and
   * the last one's failure: a step that keeps failing ends its turn once they are spent.
   */
  attempts?: number;
  lastModelError?: string;
  /**
   * Summarizing calls begun for the current step's compactions (README "Long sessions"), from a
   * budget of their own as large as the step's, so compacting never makes a step more fragile and
   * a restart loop during compactions still stops.
   */
  compactionAttempts?: number;
  /**
   * Times the current step's tool calls began to run: the first when the calls were appended,
   * one more for each re-run after a restart cut them short. Bounded (MAX_TOOL_RUNS).
   */
  toolRuns?: number;
  /** The open turn's model usage so far (summed into its `turn/end`). */
  usage?: Usage;
  /** The trace the open turn continues (its first message's); none: a trace of its own (README "Traces"). */
  trace?: TraceContext;
  /** Set by an interrupt: pending work waits for the next waking delivery. */
  parked: boolean;
}

export const INITIAL_LOOP: LoopState = {
  epoch: 0,
  turns: 0,
  openTurn: null,
  turnStartSeq: null,
  step: 0,
  parked: false,
};

export interface PendingItem {
  messageId: string;
  lane: InboxLane;
  waking: boolean;
}

export type Plan =
  | { kind: "idle" }
  | { kind: "start-turn"; claim: string[] }
  | { kind: "model"; claim: string[] }
  | { kind: "tools"; calls: ToolCall[] }
  | { kind: "await-tools" };

export interface PlanInput {
  loop: LoopState;
  /** Pending (unclaimed) inbox items in acceptance order. */
  pending: readonly PendingItem[];
  /** Tool calls of the open turn's last assistant message that have no result yet. */
  unanswered: readonly ToolCall[];
  /** Which of those are long-running calls already in flight (their result arrives later). */
  inFlight: ReadonlySet<string>;
}

export function planStep({ loop, pending, unanswered, inFlight }: PlanInput): Plan {
  const nextStep = pending.filter((p) => p.lane === "next-step").map((p) => p.messageId);
  if (loop.openTurn === null) {
    if (loop.parked || !pending.some((p) => p.waking)) return { kind: "idle" };
    const turnMessage = pending.find((p) => p.lane === "next-turn");
    return { kind: "start-turn", claim: turnMessage ? [turnMessage.messageId, ...nextStep] : nextStep };
  }
  if (unanswered.length > 0) {
    const runnable = unanswered.filter((c) => !inFlight.has(c.id));
    return runnable.length > 0 ? { kind: "tools", calls: runnable } : { kind: "await-tools" };
  }
  return { kind: "model", claim: nextStep };
}
