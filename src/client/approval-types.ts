/**
 * Wire types of approvals (README "Approvals"), as a client sees them: which calls wait for a
 * person, the decision and its reach, and a pending approval as listed.
 */

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
