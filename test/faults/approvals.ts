import {
  cutByReset,
  type Evidence,
  injectedText,
  refOf,
  resetsOf,
  type Span,
  spentBudget,
  stoppedBy,
  within,
} from "./explanations";
import type { Op } from "./harness";
import { GATED_TOOL, REGISTRY_REF } from "./scenario";
import type { LogEvent } from "./snapshot";
import { textOf } from "./tables";

/**
 * The ledger of approvals (README "Approvals", docs/semantics.md §7.3): each gated call of the
 * schedule (a message whose script calls the gated tool with a unique text) against the decisions
 * the client sent for it (`approve`, `deny`, and the schedule's end's `settle-approval`, each
 * acknowledged, refused or cut off) and what the logs say once quiet. A call is held to exactly
 * its decision:
 *
 *   approved   it ran once: one result, not an error, with the echoed text (or none when its turn
 *              ended, for a cause in the history, before the next pass ran it); an approve was
 *              sent (acknowledged or cut off)
 *   denied     by a decision the client sent: one error result `denied: <its reason>`; by the end
 *              of its turn: no result, the turn ended as the reason says, for a cause in the
 *              history; by the timeout: the root's `approvalTimeoutSeconds`, passed, and one error
 *              result saying so
 *   acknowledged  a 200 answer is the decision the log keeps; a 409 ALREADY_DECIDED means the
 *              log keeps the other one, taken first by the turn's end or the timeout
 *
 * and never two results for one call, never a gated call run without an approve, every decision
 * of the asking session's log also in its root's. Counted, by how each call came out, as notes.
 */

export type ApprovalFlag = (
  category: "wrong" | "duplicated" | "lost" | "unexpected",
  id: string,
  message: string,
) => void;

const DECIDING = new Set(["approve", "deny", "settle-approval"]);
const TIMEOUT = /^no decision came within (\d+) s$/;
const TURN_END = /^the turn (was interrupted|ended \((\w+)\))$/;

/** The decision an operation sent. */
function sent(op: Op): "approve" | "deny" {
  return op.kind === "approve" ? "approve" : "deny";
}

/** A 409 ALREADY_DECIDED of a decision: the other one was taken first, by what the log says. */
export function alreadyDecided(ev: Evidence, op: Op): string | undefined {
  if (!DECIDING.has(op.kind) || op.status !== 409 || op.code !== "ALREADY_DECIDED") return undefined;
  const asker = ev.sessions.get(String(op.input?.sessionId));
  const decided = asker?.events.find(
    (e) => e.type === "approval/decided" && e.data.approvalId === op.input?.approvalId,
  );
  if (!decided || decided.data.decision === sent(op)) return undefined;
  if (op.wall && decided.at > op.wall.end) return undefined;
  const reason = String(decided.data.reason ?? "");
  if (TIMEOUT.test(reason)) return "its timeout denied it first";
  if (TURN_END.test(reason)) return "the end of its turn denied it first";
  return undefined;
}

/** Whether a fault, a reset or a spent budget explains a turn that ended `error` (claims no firing). */
function errorCause(ev: Evidence, id: string, error: string, span: Span): string | undefined {
  const scope = refOf(ev, id);
  const fired = ev.fired.find(
    (f) =>
      (f.scope === scope || f.scope === REGISTRY_REF) &&
      within(f.at, span) &&
      error.includes(injectedText(f, ev.scenario.seed)),
  );
  if (fired) return `${fired.kind} injected at ${fired.point}`;
  return cutByReset(ev, scope, span, error) ?? spentBudget(ev, scope, span, error);
}

/** Why the turn holding a call ended `reason` (`error`) inside `span`, or undefined. */
function turnEndCause(
  ev: Evidence,
  id: string,
  reason: string,
  error: string,
  span: Span,
): string | undefined {
  if (reason === "aborted") {
    const by = stoppedBy(ev, id, span);
    return by && `stopped by ${by}`;
  }
  if (reason === "error") return errorCause(ev, id, error, span);
  return undefined;
}

/** The top of a session's tree. */
function rootOf(ev: Evidence, id: string): string {
  let at = id;
  for (let depth = 0; depth < 16; depth++) {
    const parent = ev.sessions.get(at)?.header?.parentSession;
    if (!parent) return at;
    at = parent;
  }
  return at;
}

/** The span of the turn around event `index`: its turn/end (absent while open). */
function turnEndAfter(events: readonly LogEvent[], index: number): LogEvent | undefined {
  for (let i = index + 1; i < events.length; i++) {
    const e = events[i]!;
    if (e.type === "turn/end") return e;
    if (e.type === "turn/start") return undefined;
  }
  return undefined;
}

export function checkApprovals(ev: Evidence, notes: string[], flag: ApprovalFlag): void {
  const count = (what: string): void => {
    notes.push(`approval: ${what}`);
  };
  // every gated call that ran was approved, or denied (its result then says so)
  for (const [id, s] of ev.sessions) {
    for (const [i, result] of s.events.entries()) {
      if (result.type !== "tool/result" || result.data.name !== GATED_TOOL) continue;
      const callId = String(result.data.toolCallId);
      let request: LogEvent | undefined;
      for (let j = i - 1; j >= 0 && s.events[j]!.type !== "turn/start"; j--) {
        const e = s.events[j]!;
        if (e.type === "approval/requested" && e.data.toolCallId === callId && e.data.sessionId === id)
          request = e;
      }
      const decided =
        request &&
        s.events.find((e) => e.type === "approval/decided" && e.data.approvalId === request.data.approvalId);
      const text = textOf(result.data.content);
      if (!decided)
        flag("unexpected", id, `gated call ${callId} answered (${JSON.stringify(text)}) with no decision`);
      else if (decided.data.decision === "deny" && !(result.data.isError && text.startsWith("denied")))
        flag("wrong", id, `denied call ${callId} answered ${JSON.stringify(text)}`);
    }
  }

  const sends = ev.history.filter((o) => o.kind !== "settle-approval" && typeof o.input?.gated === "string");
  const texts = [...new Set(sends.map((o) => String(o.input?.gated)))];
  // the schedule's end denies whatever is pending, gated calls of the schedule or not
  for (const op of ev.history)
    if (
      op.kind === "settle-approval" &&
      typeof op.input?.gated === "string" &&
      !texts.includes(op.input.gated)
    )
      texts.push(op.input.gated);
  for (const gated of texts) {
    const rootRef = sends.find((o) => o.input?.gated === gated)?.target;
    const decisions = ev.history.filter((o) => DECIDING.has(o.kind) && o.input?.gated === gated);
    const requests = [...ev.sessions].flatMap(([id, s]) =>
      s.events.flatMap((e, index) =>
        e.type === "approval/requested" && e.data.sessionId === id && e.data.args?.text === gated
          ? [{ id, index, event: e }]
          : [],
      ),
    );
    const rootId = rootRef === undefined ? undefined : ev.ids.get(rootRef);
    if (requests.length === 0) {
      // its script never ran (its message was never taken, or taken with a newer one): nothing
      // could be decided
      const acked = decisions.find((o) => o.outcome === "ok");
      if (acked)
        flag(
          "unexpected",
          rootId ?? "?",
          `${acked.kind} #${acked.id} of "${gated}" acknowledged with no approval asked`,
        );
      count("never asked (its script never ran)");
      continue;
    }
    if (requests.length > 1) {
      flag("duplicated", requests[0]!.id, `"${gated}" asked ${requests.length} approvals`);
      continue;
    }
    const { id, index, event: request } = requests[0]!;
    const s = ev.sessions.get(id)!;
    const { approvalId, toolCallId } = request.data as { approvalId: string; toolCallId: string };
    const end = turnEndAfter(s.events, index);
    const results = s.events
      .slice(index + 1, end === undefined ? undefined : s.events.indexOf(end))
      .filter((e) => e.type === "tool/result" && e.data.toolCallId === toolCallId);
    const decided = s.events.filter((e) => e.type === "approval/decided" && e.data.approvalId === approvalId);
    const mine = decisions.filter((o) => o.input?.approvalId === approvalId);
    const label = `"${gated}" (approval ${approvalId.slice(0, 8)})`;

    if (results.length > 1) flag("duplicated", id, `${label}: ${results.length} results for one call`);
    if (decided.length > 1) flag("duplicated", id, `${label}: decided ${decided.length} times`);
    const first = decided[0];
    if (!first) {
      flag("lost", id, `${label}: never decided`);
      continue;
    }
    // ancestors see decisions: the root's log holds it too
    const top = rootOf(ev, id);
    if (top !== id) {
      const above = ev.sessions.get(top)?.events ?? [];
      if (!above.some((e) => e.type === "approval/decided" && e.data.approvalId === approvalId))
        flag("lost", top, `${label}: decided in ${refOf(ev, id)}'s log, absent from its root's`);
      if (!above.some((e) => e.type === "approval/requested" && e.data.approvalId === approvalId))
        flag("lost", top, `${label}: asked in ${refOf(ev, id)}'s log, absent from its root's`);
    }
    const decision = String(first.data.decision);
    const reason = first.data.reason === undefined ? undefined : String(first.data.reason);
    for (const op of mine) {
      if (op.outcome === "ok" && sent(op) !== decision)
        flag("wrong", id, `${label}: ${op.kind} #${op.id} acknowledged, the log keeps ${decision}`);
      if (op.outcome === "fail" && op.code === "ALREADY_DECIDED" && sent(op) === decision)
        flag("wrong", id, `${label}: ${op.kind} #${op.id} refused ALREADY_DECIDED, the log keeps the same`);
    }
    const text = (e: LogEvent): string => textOf(e.data.content);
    const result = results[0];
    const span: Span = { start: request.at, end: end?.at ?? first.at };

    if (decision === "approve") {
      if (!mine.some((o) => o.kind === "approve" && o.outcome !== "fail"))
        flag("unexpected", id, `${label}: approved, and no approve was sent`);
      if (!result) {
        // approved, then its turn ended before the next pass ran the call
        const why =
          end && end.data.reason !== "completed"
            ? turnEndCause(ev, id, String(end.data.reason), String(end.data.error ?? ""), {
                start: first.at,
                end: end.at,
              })
            : undefined;
        if (why) count(`approved, its turn ended before it ran: ${why}`);
        else flag("lost", id, `${label}: approved and never ran (turn ${end?.data.reason ?? "open"})`);
      } else if (!result.data.isError && text(result) === gated) count("approved, ran once");
      else if (
        result.data.isError &&
        /cut short by a restart/.test(text(result)) &&
        resetsOf(ev, refOf(ev, id), span) +
          ev.fired.filter((f) => f.scope === refOf(ev, id) && within(f.at, span)).length >
          0
      )
        count("approved, its runs were cut short by restarts");
      else flag("wrong", id, `${label}: approved, answered ${JSON.stringify(text(result))}`);
      continue;
    }

    // denied: by whom, and with what result
    const by = mine.find((o) => o.outcome !== "fail" && sent(o) === "deny" && o.input?.reason === reason);
    const timeout = reason === undefined ? undefined : TIMEOUT.exec(reason);
    const turnEnd = reason === undefined ? undefined : TURN_END.exec(reason);
    if (by) {
      if (!result?.data.isError || text(result) !== `denied: ${reason}`)
        flag(
          "wrong",
          id,
          `${label}: denied by ${by.kind} #${by.id}, answered ${JSON.stringify(result && text(result))}`,
        );
      else count(by.kind === "settle-approval" ? "denied at the schedule's end" : "denied, as decided");
    } else if (timeout) {
      const seconds = Number(timeout[1]);
      const spec = ev.scenario.roots.find((r) => ev.ids.get(r.ref) === rootOf(ev, id));
      const asked = Number(request.data.requestedAt);
      if (spec?.approvalTimeoutSeconds !== seconds)
        flag(
          "wrong",
          id,
          `${label}: timed out after ${seconds} s, the root has ${spec?.approvalTimeoutSeconds}`,
        );
      else if (first.at < asked + seconds * 1000)
        flag("wrong", id, `${label}: timed out ${first.at - asked} ms after it was asked`);
      else if (!result?.data.isError || text(result) !== `denied: ${reason}`)
        flag("wrong", id, `${label}: timed out, answered ${JSON.stringify(result && text(result))}`);
      else count("denied by its timeout");
    } else if (turnEnd) {
      const wanted = turnEnd[2] ?? "aborted";
      // denied in the transaction that appends its turn's end: next to it, in that turn
      const firstAt = s.events.indexOf(first);
      const inTurn = !s.events.slice(index + 1, firstAt).some((e) => e.type === "turn/start");
      const why =
        end && String(end.data.reason) === wanted && inTurn
          ? turnEndCause(ev, id, wanted, String(end.data.error ?? end.data.cause ?? ""), {
              start: request.at,
              end: Math.max(end.at, first.at),
            })
          : undefined;
      if (result)
        flag("wrong", id, `${label}: denied by its turn's end, answered ${JSON.stringify(text(result))}`);
      else if (!why)
        flag(
          "wrong",
          id,
          `${label}: denied (${reason}), its turn ended ${end?.data.reason ?? "never"}, and nothing caused it`,
        );
      else count(`denied by its turn's end: ${why}`);
    } else flag("wrong", id, `${label}: denied (${reason ?? "no reason"}), by no decision sent`);
  }
}
