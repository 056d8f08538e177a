import { ok } from "../../src/contract/errors";
import { callerMethod, notFound, peerMethod } from "../kernel/methods";
import type { DecisionInput } from "./approval-decisions";
import type { Parts } from "../session/session-parts";

/** The approvals of a session's subtree: listed and decided by a caller, applied where the call waits. */
export const approvalMethods = {
  approvals: callerMethod({
    need: "read",
    run: (parts: Parts) => ok({ approvals: parts.decisions.pending() }),
  }),
  decideApproval: callerMethod({
    need: "oversee",
    run: (parts: Parts, { caller, header }, approvalId: string, decision: DecisionInput) =>
      parts.decisions.decide(caller, header, approvalId, decision),
  }),
  /** At the session that asked, from the one the caller decided at (itself or an ancestor). */
  decideAsked: peerMethod({
    absent: (...[approvalId]: [string, DecisionInput, string]) => notFound(`no approval ${approvalId}`)(),
    run: (parts: Parts, approvalId: string, decision: DecisionInput, by: string) =>
      parts.decisions.decideAsked(approvalId, decision, by),
  }),
};
