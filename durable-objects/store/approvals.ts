import type { SqlValue } from "../host/port";
import type { ApprovalDecision, ApprovalScope, EventData } from "../../src/contract/events";
import type { JsonValue } from "../../src/contract/json";
import type { SessionHeader } from "../../src/contract/session";
import type { TableSql } from "./first-use-tables";
import type { SingleRow } from "./single-row";

/** An approval as a session keeps it: its own (with the call it holds) or a descendant's. */
export interface ApprovalRow {
  approvalId: string;
  /** The session that asked. */
  sessionId: string;
  toolCallId: string;
  tool: string;
  args: JsonValue;
  requestedAt: number;
  /** Own approvals: the call's key and turn, and when the approval times out. */
  callKey?: string;
  turn?: number;
  expiresAt?: number;
  decision?: ApprovalDecision;
  reason?: string;
  decidedBy?: string;
  /** Own approved calls: the runs begun. */
  runs: number;
  /**
   * Raised by a call made through a session's MCP face, or below one (core/approvals.ts
   * `MCP_FACE_CALL_PREFIX`): no MCP client's `decide_approval` decides it.
   */
  mcpFace?: true;
  /** The scopes an approve can take, where it is not `once` alone (an ACP agent's permission request). */
  scopes?: ApprovalScope[];
}

/**
 * How a decision met the approval: taken now, the same one again, the other one already taken, no
 * such approval, or an approve of a scope the approval does not offer (nothing decided).
 */
export type DecisionOutcome = "decided" | "same" | "conflict" | "unknown" | "unoffered";

interface Row extends Record<string, SqlValue> {
  approval_id: string;
  session_id: string;
  tool_call_id: string;
  tool: string;
  args: string;
  requested_at: number;
  call_key: string | null;
  turn: number | null;
  expires_at: number | null;
  decision: string | null;
  reason: string | null;
  decided_by: string | null;
  runs: number;
  mcp_face: number;
  scopes: string | null;
}

/**
 * A session's approvals (README "Approvals"): the ones it asked for, each holding one tool call
 * of its open turn, and the ones its descendants asked for as their envelopes told it (so it can
 * list its subtree's pending approvals and route a decision to the session that asked). A
 * decision is taken once: the same decision again changes nothing, the other one is refused.
 */
export class Approvals {
  constructor(readonly sql: TableSql) {}

  /**
   * This session asks: a pending approval holding `callKey` (a model's call of `turn`, or, with no
   * turn, what another holder names: an ACP agent's permission request).
   */
  request(
    row: EventData["approval/requested"] & { callKey: string; turn?: number; expiresAt?: number },
  ): void {
    this.sql.exec(
      `INSERT INTO approvals (approval_id, session_id, tool_call_id, tool, args, requested_at, call_key, turn, expires_at, mcp_face, scopes)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      row.approvalId,
      row.sessionId,
      row.toolCallId,
      row.tool,
      JSON.stringify(row.args),
      row.requestedAt,
      row.callKey,
      row.turn ?? null,
      row.expiresAt ?? null,
      row.mcpFace ? 1 : 0,
      scopesColumn(row.scopes),
    );
  }

  /** A descendant asked (its envelope): kept once, pending until its decision arrives. */
  observe(data: EventData["approval/requested"]): void {
    this.sql.exec(
      `INSERT INTO approvals (approval_id, session_id, tool_call_id, tool, args, requested_at, mcp_face, scopes)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      data.approvalId,
      data.sessionId,
      data.toolCallId,
      data.tool,
      JSON.stringify(data.args),
      data.requestedAt,
      data.mcpFace ? 1 : 0,
      scopesColumn(data.scopes),
    );
  }

  get(approvalId: string): ApprovalRow | undefined {
    if (!this.sql.exists()) return undefined;
    const row = this.sql.exec<Row>("SELECT * FROM approvals WHERE approval_id = ?", approvalId).toArray()[0];
    return row && rowOf(row);
  }

  /** Pending approvals, this session's and its descendants', oldest first. */
  pending(): ApprovalRow[] {
    if (!this.sql.exists()) return [];
    return this.sql
      .exec<Row>("SELECT * FROM approvals WHERE decision IS NULL ORDER BY requested_at, approval_id")
      .toArray()
      .map(rowOf);
  }

  /** This session's own pending approvals. */
  ownPending(sessionId: string): ApprovalRow[] {
    return this.pending().filter((r) => r.sessionId === sessionId);
  }

  /** This session's approvals holding the calls `callKeys`, by call key. */
  ofCalls(callKeys: readonly string[]): Map<string, ApprovalRow> {
    const out = new Map<string, ApprovalRow>();
    if (callKeys.length === 0 || !this.sql.exists()) return out;
    const marks = callKeys.map(() => "?").join(", ");
    for (const row of this.sql
      .exec<Row>(`SELECT * FROM approvals WHERE call_key IN (${marks})`, ...callKeys)
      .toArray())
      out.set(row.call_key!, rowOf(row));
    return out;
  }

  /** Which of these calls wait for a decision. */
  waiting(callKeys: readonly string[]): Set<string> {
    const out = new Set<string>();
    for (const [key, row] of this.ofCalls(callKeys)) if (row.decision === undefined) out.add(key);
    return out;
  }

  /** Of these calls, the approved ones whose run has not begun; their first run is counted now. */
  claimFirstRuns(callKeys: readonly string[]): Set<string> {
    const out = new Set<string>();
    for (const [key, row] of this.ofCalls(callKeys)) {
      if (row.decision !== "approve" || row.runs > 0) continue;
      this.ranOnce(row.approvalId);
      out.add(key);
    }
    return out;
  }

  /** Takes `decision` for the approval (once). */
  decide(
    approvalId: string,
    decision: ApprovalDecision,
    reason: string | undefined,
    by: string,
  ): DecisionOutcome {
    const row = this.get(approvalId);
    if (!row) return "unknown";
    if (row.decision !== undefined) return row.decision === decision ? "same" : "conflict";
    this.sql.exec(
      "UPDATE approvals SET decision = ?, reason = ?, decided_by = ? WHERE approval_id = ?",
      decision,
      reason ?? null,
      by,
      approvalId,
    );
    return "decided";
  }

  /** An approved call begins a run (bounded by the caller). */
  ranOnce(approvalId: string): void {
    this.sql.exec("UPDATE approvals SET runs = runs + 1 WHERE approval_id = ?", approvalId);
  }

  /** The earliest deadline of this session's pending approvals. */
  nextExpiry(): number | undefined {
    if (!this.sql.exists()) return undefined;
    const row = this.sql
      .exec<{ at: number | null }>(
        "SELECT min(expires_at) AS at FROM approvals WHERE decision IS NULL AND expires_at IS NOT NULL",
      )
      .one();
    return row.at ?? undefined;
  }
}

function rowOf(r: Row): ApprovalRow {
  return {
    approvalId: r.approval_id,
    sessionId: r.session_id,
    toolCallId: r.tool_call_id,
    tool: r.tool,
    args: JSON.parse(r.args) as JsonValue,
    requestedAt: r.requested_at,
    ...(r.call_key === null ? {} : { callKey: r.call_key }),
    ...(r.turn === null ? {} : { turn: r.turn }),
    ...(r.expires_at === null ? {} : { expiresAt: r.expires_at }),
    ...(r.decision === null ? {} : { decision: r.decision as ApprovalDecision }),
    ...(r.reason === null ? {} : { reason: r.reason }),
    ...(r.decided_by === null ? {} : { decidedBy: r.decided_by }),
    runs: r.runs,
    ...(r.mcp_face ? { mcpFace: true as const } : {}),
    ...(r.scopes === null ? {} : { scopes: JSON.parse(r.scopes) as ApprovalScope[] }),
  };
}

/**
 * Puts the session below the MCP face (SessionHeader `belowMcpFace`), for good: inside the
 * transaction that takes in what a call through a face made or a session below one said (a
 * message, a run's result). From then on every approval it raises, and every child it starts,
 * is below the face: no MCP client decides them (README "Approvals"). The model that read it may
 * act on it in any later turn, so the mark never ends.
 */
export function markBelowMcpFace(header: SingleRow<SessionHeader>): void {
  const now = header.get();
  if (now && !now.belowMcpFace) header.set({ ...now, belowMcpFace: true });
}

/** `scopes` as stored: JSON, or NULL for `once` alone. */
function scopesColumn(scopes: readonly ApprovalScope[] | undefined): string | null {
  return scopes === undefined ? null : JSON.stringify(scopes);
}
