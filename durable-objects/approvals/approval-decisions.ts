import { fail, ok, type Outcome } from "../../src/contract/errors";
import type { ApprovalDecision, ApprovalScope } from "../../src/contract/events";
import type { Caller, SessionHeader } from "../../src/contract/session";
import type { PendingApproval } from "../../src/contract/session-api";
import { offeredScopes, type SessionApprovals } from "./approvals";
import type { SessionContext } from "../session/session-context";
import { pendingApproval } from "../session/session-view";

/** A decision as a caller gives it. */
export interface DecisionInput {
  decision: ApprovalDecision;
  reason?: string;
  scope?: ApprovalScope;
}

/**
 * The approvals of a session's subtree as its callers see and decide them: listed where they are
 * asked and at every ancestor, decided at any of them and applied where the call waits.
 */
export class ApprovalDecisions {
  readonly #ctx: SessionContext;
  readonly #approvals: SessionApprovals;

  constructor(ctx: SessionContext, approvals: SessionApprovals) {
    this.#ctx = ctx;
    this.#approvals = approvals;
  }

  /** The pending approvals of this session and its subtree. */
  pending(): PendingApproval[] {
    return this.#ctx.stores.approvals.pending().map(pendingApproval);
  }

  /**
   * A caller's decision, taken to the session that asked: only approvals of this session's
   * subtree, so a child's path can neither see nor decide its parent's.
   */
  async decide(
    caller: Caller,
    header: SessionHeader,
    approvalId: string,
    input: DecisionInput,
  ): Promise<Outcome<{ approvalId: string; decision: ApprovalDecision }>> {
    const row = this.#ctx.stores.approvals.get(approvalId);
    if (!row) return fail("NOT_FOUND", `no approval ${approvalId} in this session's subtree`);
    const by = caller.kind === "admin" ? "admin" : header.id;
    if (row.sessionId === header.id) return this.decideAsked(approvalId, input, by);
    return this.#ctx.session(row.sessionId).decideAsked(approvalId, input, by);
  }

  /** At the session that asked: the decision applied, once. */
  decideAsked(
    approvalId: string,
    { decision, reason, scope }: DecisionInput,
    by: string,
  ): Outcome<{ approvalId: string; decision: ApprovalDecision }> {
    const outcome = this.#approvals.decide(approvalId, decision, reason, by, undefined, scope);
    if (outcome === "unknown") return fail("NOT_FOUND", `no approval ${approvalId}`);
    if (outcome === "unoffered") {
      const offered = offeredScopes(this.#ctx.stores.approvals.get(approvalId) ?? {});
      return fail(
        "SCOPE_NOT_OFFERED",
        `approval ${approvalId} cannot be approved with scope ${scope ?? "once"}: it offers ${
          offered.length === 0 ? "no approve, only deny" : `scope ${offered.join(" or ")} only`
        }; nothing was decided`,
      );
    }
    if (outcome === "conflict") {
      const taken = this.#ctx.stores.approvals.get(approvalId)?.decision;
      return fail("ALREADY_DECIDED", `approval ${approvalId} was already decided: ${taken}`);
    }
    return ok({ approvalId, decision });
  }
}
