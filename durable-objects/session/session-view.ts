import type { ApprovalRow } from "../store/approvals";
import type { PendingApproval } from "../../src/contract/session-api";
import type { SessionHeader, SessionView } from "../../src/contract/session";
import { placementOf } from "../../src/core/placement";
import type { SessionContext } from "./session-context";

/**
 * running: a turn is open or work is owed; waiting: children it owns still run, or its open turn
 * has nothing to do until a person decides an approval; idle otherwise.
 */
export function sessionStatus(ctx: SessionContext): "running" | "waiting" | "idle" {
  const { stores, turns } = ctx;
  const owes = turns.owesStep();
  if (stores.loop.get().openTurn !== null || owes) {
    // a turn that has nothing to do until a person decides is waiting
    const id = ctx.header()?.id;
    return !owes && id !== undefined && stores.approvals.ownPending(id).length > 0 ? "waiting" : "running";
  }
  return stores.children.ownedContinuable().length + stores.runs.unsettledCount() > 0 ? "waiting" : "idle";
}

/** The session as `GET /v1/sessions/:id` and every creation answer show it. */
export function sessionView(ctx: SessionContext, header: SessionHeader): SessionView {
  const { log, usage } = ctx.stores;
  const view: SessionView = {
    id: header.id,
    parentSession: header.parentSession,
    origin: header.origin,
    delegationDepth: header.delegationDepth,
    createdAt: header.createdAt,
    status: sessionStatus(ctx),
    model: header.options.model,
    lastSeq: log.nextSeq() - 1,
  };
  if (header.seedLength !== undefined) view.seedLength = header.seedLength;
  if (header.mode !== undefined) view.mode = header.mode;
  if (header.label !== undefined) view.label = header.label;
  const own = usage.own();
  if (own) view.usage = own;
  const compaction = usage.compaction();
  if (compaction) view.compactionUsage = compaction;
  const subtree = usage.subtree();
  if (subtree) view.subtreeUsage = subtree;
  const budget = ctx.budget.state();
  if (budget)
    view.budget = {
      ...budget.limit,
      used: budget.used.tokens,
      ...(budget.limit.usd === undefined ? {} : { usedUsd: budget.used.usd }),
      ...(budget.shared ? { shared: true as const } : {}),
    };
  // which MCP servers it has, never their tokens
  if (header.options.mcpServers?.length)
    view.mcpServers = header.options.mcpServers.map(({ name, url }) => ({ name, url }));
  return { ...view, ...placementOf(header) };
}

/** A pending approval as `GET …/approvals` lists it. */
export function pendingApproval(row: ApprovalRow): PendingApproval {
  const { approvalId, sessionId, tool, args, toolCallId, requestedAt, scopes } = row;
  return { approvalId, sessionId, tool, args, toolCallId, requestedAt, ...(scopes ? { scopes } : {}) };
}
