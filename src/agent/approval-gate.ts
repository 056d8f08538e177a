import type { ToolCall } from "../contract/events";
import type { Tool } from "./tools";

/**
 * What becomes of a tool call the model made, as approvals see it (README "Approvals"). The
 * session object implements it; the turn driver asks before a call runs.
 */
export interface ApprovalGate {
  /** Whether a call of `tool` waits for a decision before it runs (no storage read). */
  needs(call: ToolCall, tool: Tool<unknown, unknown> | undefined): boolean;
  /**
   * Inside the transaction before a call that `needs` one runs: `run` once it was approved; `wait`
   * when it now waits for a decision (asked for here, or still pending) or was answered without
   * running (denied, or refused: too many pending approvals).
   */
  admit(turn: number, call: ToolCall): "run" | "wait";
}
