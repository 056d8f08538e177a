import { continuableMethods } from "../delegation/continuable/continuable-methods";
import { childrenMethods } from "../delegation/children-methods";
import { runMethods } from "../delegation/one-shot/run-methods";
import { joinMethods, kernelMethods } from "../kernel/kernel-methods";
import type { RpcOf } from "../kernel/methods";
import { messagingMethods } from "../messaging/messaging-methods";
import { approvalMethods } from "../approvals/approval-methods";
import { budgetMethods } from "../budgets/budget-methods";
import { conversationMethods } from "../conversation/conversation-methods";
import { deletionMethods } from "../deletion/deletion-methods";
import { scheduleMethods } from "../schedules/schedule-methods";
import { traceMethods } from "../traces/trace-methods";

/**
 * The RPC surface of a session object: every feature's declared methods (each in its feature's
 * folder). Light on purpose: the classes a Worker exports read the names at its start, before
 * any implementation loads (src/worker/exported-classes.ts).
 */
export const SESSION_METHODS = joinMethods(
  kernelMethods,
  conversationMethods,
  scheduleMethods,
  approvalMethods,
  traceMethods,
  deletionMethods,
  budgetMethods,
  runMethods,
  continuableMethods,
  childrenMethods,
  messagingMethods,
);

/** The session object's RPC methods as its callers reach them. */
export type SessionMethods = RpcOf<typeof SESSION_METHODS>;
