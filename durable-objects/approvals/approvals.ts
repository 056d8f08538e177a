import type { ApprovalGate } from "../../src/agent/approval-gate";
import { callKey } from "../../src/agent/call-keys";
import type { Tool } from "../../src/agent/tools";
import type { TurnSettings } from "../../src/agent/turn-settings";
import type { ApprovalEnvelope } from "../../src/contract/envelope";
import type {
  ApprovalDecision,
  ApprovalScope,
  EventData,
  ToolCall,
  TurnEndReason,
} from "../../src/contract/events";
import type { JsonValue } from "../../src/contract/json";
import { isMcpFaceCall, MAX_PENDING_APPROVALS, needsApproval } from "../../src/core/approvals";
import type { ApprovalRow, DecisionOutcome } from "../store/approvals";
import type { EnvelopeHandlers, SessionPart } from "../kernel/part";
import type { SessionContext } from "../session/session-context";

/**
 * A session's approvals (README "Approvals"). A call that needs one does not run: it waits, with
 * an `approval/requested` in this log that travels up the tree through the outbox to every
 * ancestor's log. A decision (from this session's path or an ancestor's, routed here) is taken
 * once, logged as `approval/decided` and sent up likewise: `approve` lets the call run (the turn
 * driver runs it, as if the model had just made it), `deny` answers it with an error result
 * starting `denied`. The end of the call's turn and the session's `approvalTimeoutSeconds` deny
 * what is still pending. Each ancestor keeps what it heard, to list its subtree's pending
 * approvals and route decisions down to the session that asked.
 *
 * An approval raised by a call made through a session's MCP face (held as `mcp:<callId>/…` while
 * the client's request waits, or by an elicitation the client answers in a retried request), or
 * by any call of a session such a call started, at any depth, carries `mcpFace` (in its row and
 * its `approval/requested`): no MCP client decides it with `decide_approval`. A face call's
 * approval waits only while its request does: one left by an earlier instance of this object (its
 * request died with it) is denied when this instance first looks.
 */
export class SessionApprovals implements SessionPart, ApprovalGate {
  readonly name = "approvals";
  readonly #ctx: SessionContext;
  readonly #settings: () => TurnSettings;
  readonly envelopes: EnvelopeHandlers = { approval: (envelope) => this.#relay(envelope) };
  /** Holders waiting in this instance for their approvals' decisions (an ACP agent's requests). */
  readonly #waiters = new Map<string, (decided: HeldDecision) => void>();
  /** Whether this instance denied the face calls' approvals an earlier instance left waiting. */
  #orphansSwept = false;

  constructor(ctx: SessionContext, settings: () => TurnSettings) {
    this.#ctx = ctx;
    this.#settings = settings;
  }

  needs(call: ToolCall, tool: Tool<unknown, unknown> | undefined): boolean {
    return tool?.needsApproval === true || needsApproval(this.#settings().requireApproval, call.name);
  }

  admit(turn: number, call: ToolCall): "run" | "wait" {
    const { stores } = this.#ctx;
    const settings = this.#settings();
    const key = callKey(turn, call.id);
    const asked = stores.approvals.ofCalls([key]).get(key);
    if (asked) return asked.decision === "approve" ? "run" : "wait";
    const header = this.#ctx.header()!;
    if (stores.approvals.ownPending(header.id).length >= MAX_PENDING_APPROVALS) {
      this.#ctx.turns.answerDeferred(
        turn,
        call.id,
        call.name,
        [
          {
            type: "text",
            text: `Error: the call was not run: this session already waits on ${MAX_PENDING_APPROVALS} approvals, the most it may`,
          },
        ],
        true,
      );
      return "wait";
    }
    const now = Date.now();
    const data: EventData["approval/requested"] = {
      approvalId: crypto.randomUUID(),
      sessionId: header.id,
      toolCallId: call.id,
      tool: call.name,
      args: (call.args ?? {}) as JsonValue,
      requestedAt: now,
      ...(header.belowMcpFace ? { mcpFace: true as const } : {}),
    };
    const timeout = settings.approvalTimeoutMs;
    stores.approvals.request({
      ...data,
      callKey: key,
      turn,
      ...(timeout ? { expiresAt: now + timeout } : {}),
    });
    stores.log.append("approval/requested", data);
    this.#sendUp({ kind: "approval", event: "approval/requested", data });
    return "wait";
  }

  /**
   * An approval held by something other than a model's call: an ACP agent's permission request
   * of a run this session owns (`holder` `acp:<runId>`), a call made through the MCP face
   * (`mcp:<callId>`). Resolves with the decision; `release` denies what a holder still holds when
   * it stops waiting (its run ended or lost its connection, its request went away).
   */
  ask(holder: string, request: HeldRequest, options: HoldOptions = {}): Promise<HeldDecision> {
    const approvalId = this.raise(holder, request, options);
    if (approvalId === undefined)
      return Promise.resolve({
        decision: "deny",
        reason: `this session already waits on ${MAX_PENDING_APPROVALS} approvals, the most it may`,
        scope: "once",
      });
    return new Promise((resolve) => this.#waiters.set(approvalId, resolve));
  }

  /**
   * Raises an approval held by `holder` (`callKey` `<holder>/<approvalId>`) that nothing in this
   * instance waits on: a face call whose client answers an elicitation in a later request. Its id,
   * or undefined when the session already holds MAX_PENDING_APPROVALS.
   */
  raise(
    holder: string,
    request: HeldRequest,
    { mcpFace = false, waitMs }: HoldOptions = {},
  ): string | undefined {
    const { stores } = this.#ctx;
    const header = this.#ctx.header()!;
    const approvalId = crypto.randomUUID();
    const raised = stores.transact(() => {
      if (stores.approvals.ownPending(header.id).length >= MAX_PENDING_APPROVALS) return false;
      const now = Date.now();
      const data: EventData["approval/requested"] = {
        approvalId,
        sessionId: header.id,
        ...request,
        requestedAt: now,
        ...(mcpFace || header.belowMcpFace ? { mcpFace: true as const } : {}),
      };
      // the session's timeout, or sooner the holder's longest wait
      const timeout = this.#settings().approvalTimeoutMs;
      const wait = [timeout, waitMs].filter((ms): ms is number => ms !== undefined);
      stores.approvals.request({
        ...data,
        callKey: `${holder}/${approvalId}`,
        ...(wait.length > 0 ? { expiresAt: now + Math.min(...wait) } : {}),
      });
      stores.log.append("approval/requested", data);
      this.#sendUp({ kind: "approval", event: "approval/requested", data });
      return true;
    });
    if (!raised) return undefined;
    this.#ctx.kick(); // a timeout needs the alarm
    return approvalId;
  }

  /** Denies, with `reason`, the approvals `holder` still holds. */
  release(holder: string, reason: string): void {
    const { stores } = this.#ctx;
    const header = this.#ctx.header();
    if (!header) return;
    stores.transact(() => {
      for (const row of stores.approvals.ownPending(header.id))
        if (row.callKey?.startsWith(`${holder}/`)) this.#decide(row.approvalId, "deny", reason, header.id);
    });
  }

  /**
   * Takes a decision for an approval this session asked for (from its own path or an ancestor's).
   * `by`: "admin" or the session whose path the decision came through.
   */
  decide(
    approvalId: string,
    decision: ApprovalDecision,
    reason: string | undefined,
    by: string,
    via?: "mcp-elicitation",
    scope: ApprovalScope = "once",
  ): DecisionOutcome {
    const { stores } = this.#ctx;
    this.#sweepOrphans();
    const outcome = stores.transact(() => {
      const row = stores.approvals.get(approvalId);
      if (!row || row.sessionId !== this.#ctx.header()?.id) return "unknown";
      // an approve reaches only as far as the approval offers; a deny is never too broad
      if (row.decision === undefined && decision === "approve" && !offeredScopes(row).includes(scope))
        return "unoffered";
      return this.#decide(approvalId, decision, reason, by, { via, scope });
    });
    if (outcome === "decided") this.#ctx.kick();
    return outcome;
  }

  /** Inside the transaction that ends a turn: its pending approvals are denied. */
  onTurnEnd(turn: number, reason: TurnEndReason): void {
    const header = this.#ctx.header();
    if (!header) return;
    const why = reason === "aborted" ? "the turn was interrupted" : `the turn ended (${reason})`;
    for (const row of this.#ctx.stores.approvals.ownPending(header.id))
      if (row.turn === turn) this.#decide(row.approvalId, "deny", why, header.id, { answer: false });
  }

  /** The next approval to time out (now, while an earlier instance's face calls' approvals wait). */
  nextDue(): number | undefined {
    if (!this.#orphansSwept) {
      if (this.#orphans().length > 0) return Date.now();
      this.#orphansSwept = true;
    }
    return this.#ctx.stores.approvals.nextExpiry();
  }

  /** Denies the approvals past their `approvalTimeoutSeconds` (or their holder's longest wait). */
  async step(): Promise<boolean> {
    const { stores } = this.#ctx;
    const swept = this.#sweepOrphans();
    const due = stores.approvals.nextExpiry();
    if (due === undefined || due > Date.now()) return swept;
    stores.transact(() => {
      const header = this.#ctx.header()!;
      const now = Date.now();
      for (const row of stores.approvals.ownPending(header.id))
        if (row.expiresAt !== undefined && row.expiresAt <= now) {
          const seconds = Math.round((row.expiresAt - row.requestedAt) / 1000);
          this.#decide(row.approvalId, "deny", `no decision came within ${seconds} s`, header.id);
        }
    });
    this.#ctx.kick();
    return true;
  }

  /**
   * Once per instance: denies the approvals of face calls (`mcp:<callId>/…`) that nothing here
   * waits on. Their requests were served by an earlier instance and died with it, so no approval
   * could run them; they would otherwise read as pending until they expired. Whether it denied any.
   */
  #sweepOrphans(): boolean {
    if (this.#orphansSwept) return false;
    this.#orphansSwept = true;
    const { stores } = this.#ctx;
    const header = this.#ctx.header();
    const orphans = this.#orphans();
    if (!header || orphans.length === 0) return false;
    stores.transact(() => {
      for (const row of orphans)
        this.#decide(
          row.approvalId,
          "deny",
          "the MCP request that made the call ended when the session restarted; nobody waits for its result",
          header.id,
        );
    });
    this.#ctx.kick();
    return true;
  }

  /** Pending approvals of face calls that no request of this instance waits on. */
  #orphans(): ApprovalRow[] {
    const header = this.#ctx.header();
    if (!header) return [];
    return this.#ctx.stores.approvals
      .ownPending(header.id)
      .filter((row) => isMcpFaceCall(row.callKey) && !this.#waiters.has(row.approvalId));
  }

  /**
   * Inside a transaction: the decision of an own approval, logged, sent up and applied to its call
   * (`answer: false` when its turn is ending: the call stays unanswered in a closed turn).
   */
  #decide(
    approvalId: string,
    decision: ApprovalDecision,
    reason: string | undefined,
    by: string,
    {
      answer = true,
      via,
      scope = "once",
    }: { answer?: boolean; via?: "mcp-elicitation" | undefined; scope?: ApprovalScope } = {},
  ): DecisionOutcome {
    const { stores, turns } = this.#ctx;
    const outcome = stores.approvals.decide(approvalId, decision, reason, by);
    if (outcome !== "decided") return outcome;
    const data: EventData["approval/decided"] = {
      approvalId,
      decision,
      ...(reason ? { reason } : {}),
      by,
      ...(via ? { via } : {}),
      ...(decision === "approve" && scope === "always" ? { scope } : {}),
    };
    stores.log.append("approval/decided", data);
    this.#sendUp({ kind: "approval", event: "approval/decided", data });
    const row = stores.approvals.get(approvalId)!;
    // a denied call is answered now (its turn goes on); an approved one runs at the next step
    if (answer && decision === "deny" && row.turn !== undefined)
      turns.answerDeferred(
        row.turn,
        row.toolCallId,
        row.tool,
        [{ type: "text", text: deniedText(reason) }],
        true,
      );
    // a holder waiting here (an ACP agent's request) hears it once the transaction is over
    const waiter = this.#waiters.get(approvalId);
    if (waiter) {
      this.#waiters.delete(approvalId);
      queueMicrotask(() => waiter({ decision, ...(reason ? { reason } : {}), scope }));
    }
    return outcome;
  }

  /** A descendant's approval or its decision, from a child: logged, kept and passed on up. */
  #relay(envelope: ApprovalEnvelope): boolean {
    const { stores } = this.#ctx;
    if (envelope.event === "approval/requested") {
      stores.log.append("approval/requested", envelope.data);
      stores.approvals.observe(envelope.data);
      this.#sendUp({ kind: "approval", event: "approval/requested", data: envelope.data });
    } else {
      const { approvalId, decision, reason, by } = envelope.data;
      stores.log.append("approval/decided", envelope.data);
      stores.approvals.decide(approvalId, decision, reason, by);
      this.#sendUp({ kind: "approval", event: "approval/decided", data: envelope.data });
    }
    return false;
  }

  /** Sends an approval event on to the parent, if this session has one here. */
  #sendUp(message: Pick<ApprovalEnvelope, "kind" | "event" | "data">): void {
    const header = this.#ctx.header();
    if (!header?.parentSession) return;
    const stage = message.event === "approval/requested" ? "requested" : "decided";
    this.#ctx.stores.outbox.enqueue({
      v: 1,
      id: `approval-${stage}:${message.data.approvalId}`,
      from: header.id,
      to: header.parentSession,
      ...message,
    } as ApprovalEnvelope);
  }
}

/** How a holder's approval is raised: by a face call (`mcpFace`), waited on at most `waitMs`. */
export interface HoldOptions {
  mcpFace?: boolean;
  waitMs?: number;
}

/**
 * What a holder's approval shows (`scopes`: what an approve of it can take, where it is not `once`
 * alone, e.g. an ACP agent's allow options).
 */
export interface HeldRequest {
  toolCallId: string;
  tool: string;
  args: JsonValue;
  scopes?: ApprovalScope[];
}

/** The decision a holder hears, with the scope it was given (`once` unless a decision said otherwise). */
export interface HeldDecision {
  decision: ApprovalDecision;
  reason?: string;
  scope: ApprovalScope;
}

/** The scopes an approve of `row` can take: its own list, else `once` (a tool call). */
export function offeredScopes(row: { scopes?: readonly ApprovalScope[] }): readonly ApprovalScope[] {
  return row.scopes ?? ["once"];
}

/** A denied call's result: the word `denied`, then the reason. */
export function deniedText(reason: string | undefined): string {
  return reason ? `denied: ${reason}` : "denied";
}
