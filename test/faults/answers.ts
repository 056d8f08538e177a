import type { Op } from "./harness";
import type { Scenario } from "./scenario";
import type { LogEvent, Snapshot } from "./snapshot";

/**
 * The campaign's independent ledger of answers: what each acknowledged operation must produce, as
 * the client side recorded it when it sent it (`op.input.answers`: the scripted text, or none for
 * a scripted failure), compared with what the sessions say after the drain. A message must be
 * answered exactly once with its text; a one-shot run's result must be what its child was
 * scripted to say. Anything else must be explained by something the schedule did (an interrupt,
 * a dispose, a fault it injects in that scope) and is counted as refused, by reason; otherwise
 * it is `wrong`.
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

const MODEL_POINTS = new Set(["before-model", "after-model"]);

export function emptyTally(): AnswerTally {
  return { checked: 0, asExpected: 0, refused: {} };
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b: { text?: string }) => b.text ?? "").join("");
}

function refuse(tally: AnswerTally, reason: string): void {
  tally.refused[reason] = (tally.refused[reason] ?? 0) + 1;
}

/** Why an end other than the scripted one may have happened in `scope`, or undefined. */
function explanation(
  scope: string,
  reason: string,
  error: string,
  scenario: Scenario,
  ops: readonly Op[],
): string | undefined {
  const rules = scenario.rules;
  const on = (...kinds: string[]) => ops.some((o) => o.target === scope && kinds.includes(o.kind));
  if (reason === "aborted") {
    if (on("interrupt", "interrupt-child", "dispose", "drain")) return "interrupted by the schedule";
    // a continuable child's parent drains its children, or its model interrupts this one
    const child = scenario.children.find((c) => c.ref === scope);
    const byParent = ops.some(
      (o) =>
        o.target === child?.root &&
        (o.kind === "drain" ||
          ((o.kind === "send" || o.kind === "together") &&
            String(o.input?.content ?? "").includes("interrupt_agent") &&
            String(o.input?.content ?? "").includes(child.id))),
    );
    if (byParent) return "interrupted by its parent";
    return undefined;
  }
  if (rules.some((r) => r.scope === scope && MODEL_POINTS.has(r.point)))
    return "a model fault the schedule injects there";
  // every attempt of a step cut short (by faults in its steps or by resets) spends the step's
  // durable attempt budget: the bounded end of a crash loop
  const spent = /the model step failed \d+ times/.test(error);
  // (a delay or a lost alarm only postpones work: neither spends an attempt)
  const spending = rules.some((r) => r.scope === scope && r.kind !== "delay" && r.kind !== "lost-alarm");
  if (spent && (spending || on("abort", "storm", "race", "evict")))
    return "faults during every attempt of a step";
  return undefined;
}

interface Turn {
  turn: number;
  reason: string;
  error: string;
  texts: string[];
}

function turnsOf(events: readonly LogEvent[]): Map<number, Turn> {
  const turns = new Map<number, Turn>();
  let open: Turn | undefined;
  for (const e of events) {
    if (e.type === "turn/start") {
      open = { turn: e.data.turn, reason: "open", error: "", texts: [] };
      turns.set(open.turn, open);
    } else if (e.type === "assistant/message" && open) {
      const text = textOf(e.data.content);
      if (text) open.texts.push(text);
    } else if (e.type === "turn/end") {
      const turn = turns.get(e.data.turn);
      if (turn) {
        turn.reason = e.data.reason;
        turn.error = String(e.data.error ?? e.data.cause ?? "");
      }
      open = undefined;
    }
  }
  return turns;
}

/**
 * The acknowledged messages of a top-level session: each one's turn (the newest message a turn
 * took is the one the scripted model answers) must say the message's scripted text exactly once
 * in the session's log, or end as the schedule explains.
 */
export function checkMessageAnswers(
  id: string,
  ref: string,
  session: Snapshot,
  sends: readonly Op[],
  scenario: Scenario,
  history: readonly Op[],
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
  checkAnswered(id, ref, session, acknowledged, answersOf, scenario, history, tally, flag);
}

/**
 * The acknowledged messages of a continuable child (its first message and each follow-up): each
 * one's turn says the message's scripted text exactly once in the child's log, or ends as the
 * schedule explains (an interrupt or drain by its parent counts too).
 */
export function checkChildAnswers(
  id: string,
  ref: string,
  session: Snapshot,
  ops: readonly Op[],
  scenario: Scenario,
  history: readonly Op[],
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
  checkAnswered(
    id,
    ref,
    session,
    acknowledged,
    (messageId) => byMessage.get(messageId),
    scenario,
    history,
    tally,
    flag,
  );
}

function checkAnswered(
  id: string,
  ref: string,
  session: Snapshot,
  acknowledged: readonly { key: string; row: { messageId: string; state: string } }[],
  answersOf: (messageId: string) => string[] | undefined,
  scenario: Scenario,
  history: readonly Op[],
  tally: AnswerTally,
  flag: Flag,
): void {
  const claims = session.events.filter((e) => e.type === "agent/inbox/claimed");
  const discarded = session.events.filter((e) => e.type === "agent/inbox/discarded");
  const turns = turnsOf(session.events);
  const allTexts = session.events
    .filter((e) => e.type === "assistant/message")
    .map((e) => textOf(e.data.content));
  for (const { key, row } of acknowledged) {
    const claim = claims.find((c) => c.data.messageId === row.messageId);
    if (!claim) {
      tally.checked++;
      const gone = discarded.find((d) => d.data.messageId === row.messageId);
      if (gone) refuse(tally, `discarded: ${gone.data.reason}`);
      else flag("lost", id, `acknowledged message ${key} was never answered (${row.state})`);
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
    if (expected.length === 0 && turn.reason === "error" && /model failed/.test(turn.error)) {
      tally.asExpected++; // the scripted failure
      continue;
    }
    const why = explanation(ref, turn.reason, turn.error, scenario, history);
    if (why) refuse(tally, `${turn.reason}: ${why}`);
    else
      flag("wrong", id, `message ${key}: turn ${turn.turn} ended ${turn.reason} (${turn.error}) unexplained`);
  }
}

/** An acknowledged one-shot run's result: what its child was scripted to say, or explained. */
export function checkRunAnswer(
  parentId: string,
  childRef: string,
  result: { output?: unknown; stopReason?: string; diagnostic?: string } | null,
  answers: readonly string[],
  scenario: Scenario,
  history: readonly Op[],
  tally: AnswerTally,
  flag: Flag,
): void {
  if (!result) return; // an unsettled run is `stuck` already
  tally.checked++;
  const text = textOf(result.output);
  const reason = result.stopReason ?? "?";
  if (reason === "completed") {
    if (answers.length > 0 && answers.includes(text)) tally.asExpected++;
    else
      flag(
        "wrong",
        parentId,
        `run of ${childRef} completed with ${JSON.stringify(text)}, expected ${JSON.stringify(answers)}`,
      );
    return;
  }
  const error = String(result.diagnostic ?? "");
  if (answers.length === 0 && reason === "error" && /child failed/.test(error)) {
    tally.asExpected++;
    return;
  }
  const why = explanation(childRef, reason, error, scenario, history);
  if (why) refuse(tally, `${reason}: ${why}`);
  else flag("wrong", parentId, `run of ${childRef} ended ${reason} (${error}) unexplained`);
}
