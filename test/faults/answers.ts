import { drainedIn, type Evidence, explainEnd, type RunRef, type Span, timeOf } from "./explanations";
import type { Op } from "./harness";
import type { LogEvent, Snapshot } from "./snapshot";

/**
 * The campaign's independent ledger of answers: what each acknowledged operation must produce, as
 * the client side recorded it when it sent it (`op.input.answers`: the scripted text, or none for
 * a scripted failure), compared with what the sessions say after the drain. A message must be
 * answered exactly once with its text; a run's result must be what its child was scripted to
 * say. Anything else must be explained by its cause in the history (explanations.ts: an
 * acknowledged interrupt after the message was accepted, a fault that fired in that turn with the
 * error it carries, a drain that covers a discarded message) and is counted as refused, by
 * reason; otherwise it is `wrong`.
 */

export interface AnswerTally {
  /** Acknowledged operations whose outcome was compared with the ledger. */
  checked: number;
  /** ... whose outcome is what the ledger says. */
  asExpected: number;
  /** ... whose outcome the schedule explains otherwise, by reason. */
  refused: Record<string, number>;
}

export type Flag = (category: "wrong" | "duplicated" | "lost", id: string, message: string) => void;

export function emptyTally(): AnswerTally {
  return { checked: 0, asExpected: 0, refused: {} };
}

export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b: { text?: string }) => b.text ?? "").join("");
}

export function refuse(tally: AnswerTally, reason: string): void {
  tally.refused[reason] = (tally.refused[reason] ?? 0) + 1;
}

interface Turn {
  turn: number;
  reason: string;
  error: string;
  texts: string[];
  /** When it started and ended, on the sessions' clock. */
  start: number;
  end: number;
}

function turnsOf(events: readonly LogEvent[]): Map<number, Turn> {
  const turns = new Map<number, Turn>();
  let open: Turn | undefined;
  for (const e of events) {
    if (e.type === "turn/start") {
      open = { turn: e.data.turn, reason: "open", error: "", texts: [], start: e.at, end: e.at };
      turns.set(open.turn, open);
    } else if (e.type === "assistant/message" && open) {
      const text = textOf(e.data.content);
      if (text) open.texts.push(text);
    } else if (e.type === "turn/end") {
      const turn = turns.get(e.data.turn);
      if (turn) {
        turn.reason = e.data.reason;
        turn.error = String(e.data.error ?? e.data.cause ?? "");
        turn.end = e.at;
      }
      open = undefined;
    }
  }
  return turns;
}

/**
 * The acknowledged messages of a top-level session: each one's turn (the newest message a turn
 * took is the one the scripted model answers) must say the message's scripted text exactly once
 * in the session's log, or end as its cause in the history explains.
 */
export function checkMessageAnswers(
  ev: Evidence,
  id: string,
  session: Snapshot,
  sends: readonly Op[],
  tally: AnswerTally,
  flag: Flag,
): void {
  const answersOf = (messageId: string): string[] | undefined => {
    const row = session.inbox.find((r) => r.messageId === messageId);
    const op = sends.find((o) => o.input?.key === row?.idempotencyKey && Array.isArray(o.input?.answers));
    return op?.input?.answers as string[] | undefined;
  };
  const keys = new Set(
    sends
      .filter((o) => o.outcome === "ok" && Array.isArray(o.input?.answers))
      .map((o) => String(o.input?.key)),
  );
  const acknowledged = [...keys].flatMap((key) => {
    const row = session.inbox.find((r) => r.idempotencyKey === key);
    return row ? [{ key, row }] : []; // a missing row is `lost` already
  });
  checkAnswered(ev, id, session, acknowledged, answersOf, tally, flag);
}

/**
 * The acknowledged messages of a continuable child (its first message and each follow-up): each
 * one's turn says the message's scripted text exactly once in the child's log, or ends as its
 * cause in the history explains.
 */
export function checkChildAnswers(
  ev: Evidence,
  id: string,
  session: Snapshot,
  ops: readonly Op[],
  tally: AnswerTally,
  flag: Flag,
): void {
  const byMessage = new Map<string, string[]>();
  for (const op of ops)
    if (op.outcome === "ok" && Array.isArray(op.input?.answers) && op.result?.messageId)
      byMessage.set(String(op.result.messageId), op.input.answers as string[]);
  const acknowledged = [...byMessage.keys()].flatMap((messageId) => {
    const row = session.inbox.find((r) => r.messageId === messageId);
    return row ? [{ key: messageId, row }] : []; // a missing row is `lost` already
  });
  checkAnswered(ev, id, session, acknowledged, (messageId) => byMessage.get(messageId), tally, flag);
}

export function checkAnswered(
  ev: Evidence,
  id: string,
  session: Snapshot,
  acknowledged: readonly { key: string; row: { messageId: string; state: string } }[],
  answersOf: (messageId: string) => string[] | undefined,
  tally: AnswerTally,
  flag: Flag,
): void {
  const claims = session.events.filter((e) => e.type === "agent/inbox/claimed");
  const turns = turnsOf(session.events);
  const allTexts = session.events
    .filter((e) => e.type === "assistant/message")
    .map((e) => textOf(e.data.content));
  for (const { key, row } of acknowledged) {
    const accepted = timeOf(session.events, "agent/inbox/inserted", (d) => d.messageId === row.messageId);
    const claim = claims.find((c) => c.data.messageId === row.messageId);
    if (!claim) {
      tally.checked++;
      checkDiscarded(ev, id, session, key, row, accepted, tally, flag);
      continue;
    }
    const turn = turns.get(claim.data.turn);
    if (!turn || turn.reason === "open") continue; // an open turn is `stuck` already
    const newest = claims.filter((c) => c.data.turn === claim.data.turn).at(-1)!;
    const expected = answersOf(newest.data.messageId);
    if (expected === undefined) continue; // the turn answers a message the ledger knows no answer of
    tally.checked++;
    if (turn.reason === "completed") {
      const wanted = expected[0];
      if (wanted === undefined) {
        flag("wrong", id, `message ${key}: a scripted failure completed (turn ${turn.turn})`);
      } else if (!turn.texts.includes(wanted)) {
        flag(
          "wrong",
          id,
          `message ${key}: turn ${turn.turn} said ${JSON.stringify(turn.texts)}, not "${wanted}"`,
        );
      } else if (allTexts.filter((t) => t === wanted).length > 1) {
        flag("duplicated", id, `message ${key}: "${wanted}" answered more than once`);
      } else tally.asExpected++;
      continue;
    }
    // the scripted failure (a message's, or the prompt of a child a model started)
    if (
      expected.length === 0 &&
      turn.reason === "error" &&
      /(model|child) failed s\d+-\d+/.test(turn.error)
    ) {
      tally.asExpected++;
      continue;
    }
    // a stop must come after the message was accepted; a fault must fire in the turn itself
    const span: Span = {
      start: turn.reason === "aborted" ? (accepted ?? turn.start) : turn.start,
      end: turn.end,
    };
    const why = explainEnd(ev, id, turn.reason, turn.error, span);
    if (why) refuse(tally, `${turn.reason}: ${why}`);
    else
      flag("wrong", id, `message ${key}: turn ${turn.turn} ended ${turn.reason} (${turn.error}) unexplained`);
  }
}

/** An acknowledged message never claimed: discarded by a drain that covers it, or lost. */
function checkDiscarded(
  ev: Evidence,
  id: string,
  session: Snapshot,
  key: string,
  row: { messageId: string; state: string },
  accepted: number | undefined,
  tally: AnswerTally,
  flag: Flag,
): void {
  const gone = session.events.find(
    (e) => e.type === "agent/inbox/discarded" && e.data.messageId === row.messageId,
  );
  if (!gone) {
    flag("lost", id, `acknowledged message ${key} was never answered (${row.state})`);
    return;
  }
  const drain =
    gone.data.reason === "drained by parent"
      ? drainedIn(ev, id, { start: accepted ?? gone.at, end: gone.at })
      : undefined;
  if (drain)
    refuse(
      tally,
      `discarded: ${drain.outcome === "ok" ? "an acknowledged drain" : "a drain cut off before its answer"}`,
    );
  else flag("wrong", id, `message ${key} discarded (${gone.data.reason}) with no drain covering it`);
}

export interface RunResult {
  output?: unknown;
  stopReason?: string;
  diagnostic?: string;
}

/** A run's result: what its child was scripted to say, or explained by its cause. */
export function checkRunAnswer(
  ev: Evidence,
  run: RunRef & { childId: string; result: RunResult | null },
  answers: readonly string[],
  span: Span,
  tally: AnswerTally,
  flag: Flag,
): void {
  const { parentId, childId, result } = run;
  if (!result) return; // an unsettled run is `stuck` already
  tally.checked++;
  const text = textOf(result.output);
  const reason = result.stopReason ?? "?";
  const label = [...ev.ids].find(([, v]) => v === childId)?.[0] ?? childId.slice(0, 8);
  if (reason === "completed") {
    if (answers.length > 0 && answers.includes(text)) tally.asExpected++;
    else
      flag(
        "wrong",
        parentId,
        `run of ${label} completed with ${JSON.stringify(text)}, expected ${JSON.stringify(answers)}`,
      );
    return;
  }
  const error = String(result.diagnostic ?? "");
  if (answers.length === 0 && reason === "error" && /child failed/.test(error)) {
    tally.asExpected++;
    return;
  }
  const why = explainEnd(ev, childId, reason, error, span, run);
  if (why) refuse(tally, `${reason}: ${why}`);
  else flag("wrong", parentId, `run of ${label} ended ${reason} (${error}) unexplained`);
}
