import { type ControlChild, DOOMED_ROOT, STEERING_ROOT } from "./control-plan";
import type { ControlEvidence } from "./control-run";
import { cutByReset, type Evidence, explainEnd, injectedFault, refOf, type Span } from "./explanations";
import type { Op } from "./harness";
import type { InboxRow, LogEvent, Snapshot } from "./snapshot";
import { textOf } from "./tables";

/**
 * The ledger of control over time (README "Steering, deadlines and schedules", "Deleting
 * sessions"), against the logs once the drain is over. The client side knows each message it sent
 * (its key, content, delivery and, for a message for later, its time), each schedule it made (its
 * cron's firing times), each child it started with a deadline, and the tree it deleted. Held:
 *
 *   every message     delivered exactly once: one row, one claim, one user/message, never
 *                     discarded; an acknowledged one present, a refused one absent; a message for
 *                     later inserted no earlier than its time
 *   a steer           read inside the turn that was running when it was accepted (then a step
 *                     follows it in that turn), or, when none was, or that turn ended aborted or in
 *                     error first, claimed as the next turn starts; steers read in the order they
 *                     were accepted
 *   the turn queue    each turn takes the head of its queue: messages in acceptance order, a
 *                     replacing one (`interrupt`) ahead of all; a turn ended `aborted` by exactly
 *                     such a message, in the transaction that accepted it, and every replacing
 *                     message ends the turn that was running
 *   refusals          a 404 of a route of the doomed tree once its deletion was sent; a follow-up
 *                     refused NOT_RESUMABLE to a child no start of which was acknowledged
 *   a completed turn  says what its newest message asks (the scripted model's rule)
 *   a schedule        each firing time of its window at most once, in order, never early, never
 *                     after its deletion, the first its `next`; missed periods delivered once (a
 *                     firing's time is after the previous firing); every time of the window that
 *                     passed while it lived delivered, or stood for by its previous message, still
 *                     waiting then
 *   a deadline        a run ended by it says `deadline passed: …` exactly and no earlier than its
 *                     time; a continuable child's turn likewise; a completed run says its answer;
 *                     a model's foreground call with `deadline_seconds` reads the diagnostic or
 *                     its child's answer
 *   a deleted tree    from the 202 on, every route of every member answers 404; after the drain,
 *                     no member keeps a table, a row or an alarm, no session of the tree is left,
 *                     and the directory no longer lists it
 *
 * Each way one of them could break is planted in a fake log by control.test.ts.
 */

export type ControlFlag = (
  category: "wrong" | "duplicated" | "lost" | "unexpected" | "stuck",
  id: string,
  message: string,
) => void;

/** The cause of a turn a message delivered as `interrupt` replaced (README). */
export const REPLACED_CAUSE = "a new message replaced the turn (delivery: interrupt)";

export function runDeadline(seconds: number): string {
  return `deadline passed: the run was still working ${seconds} s after it was accepted (deadlineSeconds)`;
}

export function turnDeadline(seconds: number): string {
  return `deadline passed: the turn was still running ${seconds} s after it started (deadlineSeconds)`;
}

const MESSAGE_KINDS = new Set(["message", "steer", "replace", "later"].flatMap((k) => [k, `${k}-retry`]));

interface Turn {
  turn: number;
  start: number;
  /** Index of its turn/end (the log's length while open). */
  end: number;
  endEvent?: LogEvent;
}

export function turnsOf(events: readonly LogEvent[]): Turn[] {
  const turns: Turn[] = [];
  let open: Turn | undefined;
  for (const [i, e] of events.entries()) {
    if (e.type === "turn/start") {
      open = { turn: Number(e.data.turn), start: i, end: events.length };
      turns.push(open);
    } else if (e.type === "turn/end" && open) {
      open.end = i;
      open.endEvent = e;
      open = undefined;
    }
  }
  return turns;
}

/** The turn open at event `index` (started before it, not yet ended). */
function openAt(turns: readonly Turn[], index: number): Turn | undefined {
  return turns.find((t) => t.start < index && t.end > index);
}

/** What the scripted model's answer to a user text is: its script's last `say`, else its echo. */
export function expectedAnswer(text: string): string {
  try {
    const parsed = JSON.parse(text) as { script?: { say?: string }[] };
    if (Array.isArray(parsed.script)) {
      const says = parsed.script.filter((s) => typeof s.say === "string");
      return says.at(-1)?.say ?? "done";
    }
  } catch {
    // not JSON: echoed
  }
  return `echo: ${text}`;
}

/** The message ops of a control root, by key (sends and their retries). */
function sendsByKey(history: readonly Op[], ref: string): Map<string, Op[]> {
  const byKey = new Map<string, Op[]>();
  for (const op of history) {
    if (op.target !== ref || !MESSAGE_KINDS.has(op.kind)) continue;
    const key = String(op.input?.key);
    byKey.set(key, [...(byKey.get(key) ?? []), op]);
  }
  return byKey;
}

export function checkControl(
  ev: Evidence,
  evidence: ControlEvidence | undefined,
  notes: string[],
  flag: ControlFlag,
): void {
  const plan = ev.scenario.control;
  if (!plan) return;
  const count = (what: string): void => {
    notes.push(`control: ${what}`);
  };
  for (const ref of plan.roots) {
    const id = ev.ids.get(ref);
    if (!id) continue;
    const s = ev.sessions.get(id);
    if (ref === DOOMED_ROOT) {
      checkDeletion(ev, id, evidence, count, flag);
      continue;
    }
    if (!s?.header) {
      flag("lost", id, `the control root ${ref} has no header`);
      continue;
    }
    checkMessages(ev, ref, id, s, count, flag);
    checkTurns(ev, id, s, count, flag);
    checkSchedules(ev, ref, id, s, count, flag);
  }
  for (const child of plan.children)
    if (child.deadlineSeconds !== undefined) checkDeadline(ev, child, count, flag);
  const c0 = ev.ids.get(STEERING_ROOT);
  const s = c0 === undefined ? undefined : ev.sessions.get(c0);
  if (c0 && s?.header) checkForegroundDeadlines(ev, c0, s, count, flag);
}

/** Every message of the root delivered exactly once, steers inside their turn, each lane in its order. */
function checkMessages(
  ev: Evidence,
  ref: string,
  id: string,
  s: Snapshot,
  count: (what: string) => void,
  flag: ControlFlag,
): void {
  const events = s.events;
  const byKey = sendsByKey(ev.history, ref);
  const turns = turnsOf(events);
  const index = (type: string, messageId: string): number[] =>
    events.flatMap((e, i) => (e.type === type && e.data.messageId === messageId ? [i] : []));
  const delivery = new Map<string, string>();

  for (const row of s.inbox) {
    if (row.source?.kind !== "user") continue;
    const ops = row.idempotencyKey ? byKey.get(row.idempotencyKey) : undefined;
    if (!ops) {
      flag("unexpected", id, `user message ${row.messageId} (key ${row.idempotencyKey}) matches no send`);
      continue;
    }
    if (ops.every((o) => o.outcome === "fail"))
      flag("unexpected", id, `message ${row.idempotencyKey}: every send was refused, and it is there`);
    if (textOf(row.content) !== String(ops[0]!.input?.content))
      flag("wrong", id, `message ${row.idempotencyKey} holds content its send did not send`);
    delivery.set(row.messageId, String(ops[0]!.input?.delivery ?? "next-turn"));
  }
  for (const [key, ops] of byKey) {
    const rows = s.inbox.filter((r) => r.idempotencyKey === key);
    const acked = ops.filter((o) => o.outcome === "ok");
    const answered = new Set(acked.map((o) => String(o.result?.messageId)));
    if (acked.length > 0 && rows.length === 0) flag("lost", id, `acknowledged message ${key} absent`);
    if (answered.size > 1) flag("duplicated", id, `key ${key} answered with ${answered.size} message ids`);
    if (rows.length > 1) flag("duplicated", id, `key ${key} stored ${rows.length} times`);
    const row = rows[0];
    if (!row) continue;
    if (answered.size > 0 && !answered.has(row.messageId))
      flag("lost", id, `key ${key} acknowledged as ${[...answered]} but stored as ${row.messageId}`);
    const label = `${ops[0]!.kind} ${key}`;
    const inserted = index("agent/inbox/inserted", row.messageId);
    const claimed = index("agent/inbox/claimed", row.messageId);
    const read = index("user/message", row.messageId);
    if (inserted.length !== 1 || claimed.length > 1 || read.length > 1) {
      flag(
        "duplicated",
        id,
        `${label}: inserted ${inserted.length}, claimed ${claimed.length}, read ${read.length} times`,
      );
      continue;
    }
    if (row.state === "discarded") {
      flag("wrong", id, `${label} was discarded (${row.state}), delivered never`);
      continue;
    }
    const at = inserted[0]!;
    const notBefore = ops[0]!.input?.notBefore;
    if (typeof notBefore === "number" && events[at]!.at < notBefore)
      flag(
        "wrong",
        id,
        `${label}: inserted at ${events[at]!.at}, ${notBefore - events[at]!.at} ms before its time`,
      );
    const wanted = delivery.get(row.messageId) === "next-step" ? "next-step" : "next-turn";
    if (events[at]!.data.lane !== wanted)
      flag("wrong", id, `${label}: inserted in lane ${events[at]!.data.lane}, not ${wanted}`);
    const claim = claimed[0];
    if (claim === undefined) continue; // a pending row is `lost` already (checkOwed)
    if (claim < at) flag("wrong", id, `${label}: claimed (seq ${claim}) before it was accepted (seq ${at})`);
    if (delivery.get(row.messageId) === "next-step") checkSteer(id, events, turns, label, at, claim, flag);
    count(`${ops[0]!.kind} delivered once`);
  }
  checkLanes(id, events, delivery, flag);
}

/** A steer accepted at event `at`, claimed at event `claim`: inside the turn then running, or the next. */
export function checkSteer(
  id: string,
  events: readonly LogEvent[],
  turns: readonly Turn[],
  label: string,
  at: number,
  claim: number,
  flag: ControlFlag,
): void {
  const running = openAt(turns, at);
  if (running && claim < running.end) {
    // read inside it: a step of the model follows the claim in that turn
    const readBy = events.slice(claim, running.end).some((e) => e.type === "assistant/message");
    if (!readBy && running.endEvent?.data.reason === "completed")
      flag("wrong", id, `${label}: claimed in turn ${running.turn}, which completed with no step after it`);
    return;
  }
  if (running && running.endEvent?.data.reason === "completed") {
    flag("wrong", id, `${label}: accepted during turn ${running.turn}, which completed without reading it`);
    return;
  }
  // no turn ran it (or the one that ran ended first): the next turn takes it as it starts
  const next = turns.find((t) => t.start > (running ? running.end : at));
  const firstStep = next
    ? events.findIndex((e, i) => i > next.start && i <= next.end && e.type === "assistant/message")
    : -1;
  if (!next || claim < next.start || claim > next.end || (firstStep >= 0 && claim > firstStep))
    flag(
      "wrong",
      id,
      `${label}: accepted with ${running ? `turn ${running.turn} ending` : "no turn running"}, not taken as turn ${next?.turn ?? "?"} started`,
    );
}

/**
 * The lanes' order: steers (users' `next-step` messages) are read in the order they were
 * accepted; each turn takes the head of the turn queue, where a replacing message goes first.
 */
export function checkLanes(
  id: string,
  events: readonly LogEvent[],
  delivery: ReadonlyMap<string, string>,
  flag: ControlFlag,
): void {
  const steersInserted: string[] = [];
  const steersClaimed: string[] = [];
  let queue: string[] = [];
  const lane = new Map<string, string>();
  for (const e of events) {
    const messageId = String(e.data?.messageId);
    if (e.type === "agent/inbox/inserted") {
      lane.set(messageId, String(e.data.lane));
      if (delivery.get(messageId) === "next-step") steersInserted.push(messageId);
      if (e.data.lane !== "next-turn") continue;
      if (delivery.get(messageId) === "interrupt") queue.unshift(messageId);
      else queue.push(messageId);
    } else if (e.type === "agent/inbox/claimed") {
      if (delivery.get(messageId) === "next-step") steersClaimed.push(messageId);
      if (lane.get(messageId) !== "next-turn") continue;
      if (queue[0] !== messageId)
        flag(
          "wrong",
          id,
          `turn ${e.data.turn} took ${messageId} while ${queue[0]} was ahead of it in the queue`,
        );
      queue = queue.filter((m) => m !== messageId);
    } else if (e.type === "agent/inbox/discarded") queue = queue.filter((m) => m !== messageId);
  }
  const order = steersInserted.filter((m) => steersClaimed.includes(m));
  if (order.join() !== steersClaimed.join())
    flag(
      "wrong",
      id,
      `steers read in the order ${steersClaimed.join(", ")}, accepted as ${order.join(", ")}`,
    );
}

/** How each turn of a control session ended: its answer, a replacing message, or a fault. */
function checkTurns(
  ev: Evidence,
  id: string,
  s: Snapshot,
  count: (what: string) => void,
  flag: ControlFlag,
): void {
  const events = s.events;
  const replacing = new Set(s.inbox.filter((r) => isReplacing(ev, r)).map((r) => r.messageId));
  for (const [i, e] of events.entries()) {
    // every replacing message ends the turn running when it was accepted, in that transaction
    if (e.type !== "agent/inbox/inserted" || !replacing.has(String(e.data.messageId))) continue;
    const running = openAt(turnsOf(events), i);
    if (!running) continue;
    const next = events.findIndex(
      (x, j) =>
        j > i && ["assistant/message", "agent/inbox/claimed", "turn/start", "turn/end"].includes(x.type),
    );
    if (next !== running.end || running.endEvent?.data.cause !== REPLACED_CAUSE)
      flag("wrong", id, `replacing message ${e.data.messageId} did not end turn ${running.turn} as it came`);
  }
  checkTurnEnds(ev, id, events, replacing, "", count, flag);
}

/** Whether an inbox row is a message delivered as `interrupt`, by the ledger. */
function isReplacing(ev: Evidence, row: InboxRow): boolean {
  if (row.source?.kind !== "user" || !row.idempotencyKey) return false;
  return ev.history.some(
    (o) =>
      MESSAGE_KINDS.has(o.kind) && o.input?.key === row.idempotencyKey && o.input?.delivery === "interrupt",
  );
}

/**
 * Each ended turn: completed with the answer its newest message asks for; aborted by a replacing
 * message accepted in that transaction, or (`deadline`, a child's) by its deadline; in error for
 * a fault in the history.
 */
export function checkTurnEnds(
  ev: Evidence,
  id: string,
  events: readonly LogEvent[],
  replacing: ReadonlySet<string>,
  deadline: string,
  count: (what: string) => void,
  flag: ControlFlag,
  deadlineMs = 0,
): void {
  for (const turn of turnsOf(events)) {
    const end = turn.endEvent;
    if (!end) continue; // an open turn is `stuck` already
    const inTurn = events.slice(turn.start, turn.end);
    const reason = String(end.data.reason);
    const label = `turn ${turn.turn}`;
    if (reason === "completed") {
      const newest = inTurn.filter((e) => e.type === "user/message").at(-1);
      const said = inTurn.filter((e) => e.type === "assistant/message").at(-1);
      const wanted = newest ? expectedAnswer(textOf(newest.data.content)) : undefined;
      if (wanted !== undefined && textOf(said?.data.content) !== wanted)
        flag("wrong", id, `${label} said ${JSON.stringify(textOf(said?.data.content))}, not "${wanted}"`);
      else count("a turn said what its newest message asked");
      continue;
    }
    const cause = String(end.data.cause ?? "");
    if (reason === "aborted" && cause === REPLACED_CAUSE) {
      // accepted in the transaction that ended the turn: the last insert before its end, with
      // no step, claim or result between them
      const at = events.slice(0, turn.end).findLastIndex((e) => e.type === "agent/inbox/inserted");
      const before = events[at];
      const between = events
        .slice(at + 1, turn.end)
        .some((e) => ["assistant/message", "agent/inbox/claimed", "tool/result"].includes(e.type));
      if (!before || at < turn.start || between || !replacing.has(String(before.data.messageId)))
        flag("wrong", id, `${label} ended "${cause}" with no replacing message accepted then`);
      else count("a turn replaced by a message (delivery: interrupt)");
      continue;
    }
    if (reason === "aborted" && deadline !== "" && cause.startsWith("deadline passed:")) {
      const start = events[turn.start]!.at;
      if (cause !== deadline) flag("wrong", id, `${label} ended "${cause}", not "${deadline}"`);
      else if (end.at - start < deadlineMs)
        flag(
          "wrong",
          id,
          `${label} ended by its deadline after ${end.at - start} ms (deadline ${deadlineMs} ms)`,
        );
      else count("a turn ended by its deadline");
      continue;
    }
    const error = String(end.data.error ?? cause);
    const span: Span = { start: events[turn.start]!.at, end: end.at };
    const why = reason === "error" ? explainEnd(ev, id, reason, error, span) : undefined;
    if (why) count(`a turn ended ${reason}: ${why}`);
    else flag("wrong", id, `${label} ended ${reason} (${error}) unexplained`);
  }
}

/** The firings of each schedule made on the root, against its window's times. */
function checkSchedules(
  ev: Evidence,
  ref: string,
  id: string,
  s: Snapshot,
  count: (what: string) => void,
  flag: ControlFlag,
): void {
  const made = ev.history.filter((o) => o.kind === "schedule" && o.target === ref);
  const firings = s.inbox.filter((r) => r.source?.kind === "schedule");
  const inserted = new Map(
    s.events.flatMap((e) =>
      e.type === "agent/inbox/inserted" ? [[String(e.data.messageId), e] as const] : [],
    ),
  );
  const claimed = new Map(
    s.events.flatMap((e) =>
      e.type === "agent/inbox/claimed" ? [[String(e.data.messageId), e] as const] : [],
    ),
  );
  const created = s.events.filter((e) => e.type === "schedule/created" && e.data.cron !== undefined);
  for (const row of firings) {
    if (!made.some((o) => o.outcome !== "fail" && o.input?.content === textOf(row.content)))
      flag("unexpected", id, `a firing (${row.messageId}) of content no schedule made`);
  }
  for (const op of made) {
    const content = String(op.input?.content);
    const times = (op.input?.times ?? []) as number[];
    const mine = created.filter((e) =>
      firings.some((r) => r.source?.scheduleId === e.data.scheduleId && textOf(r.content) === content),
    );
    const scheduleId =
      op.outcome === "ok"
        ? String(op.result?.scheduleId)
        : mine.length === 1
          ? String(mine[0]!.data.scheduleId)
          : undefined;
    if (!scheduleId) continue;
    if (op.outcome === "ok" && op.result?.next !== times[0])
      flag("wrong", id, `schedule ${content}: next ${op.result?.next}, its window starts at ${times[0]}`);
    const deletedAt = s.events.findIndex(
      (e) => e.type === "schedule/deleted" && e.data.scheduleId === scheduleId,
    );
    const removal = ev.history.find(
      (o) => o.kind.startsWith("unschedule") && o.input?.scheduleId === scheduleId && o.outcome === "ok",
    );
    const fired = firings
      .filter((r) => r.source?.scheduleId === scheduleId)
      .map((r) => ({ row: r, inserted: inserted.get(r.messageId)! }))
      .filter((f) => f.inserted !== undefined)
      .sort((a, b) => a.inserted.seq - b.inserted.seq);
    const label = `schedule ${content}`;
    checkFirings(
      id,
      label,
      times,
      fired.map((f) => ({
        at: Number(f.row.source.at),
        insertedAt: f.inserted.at,
        insertedSeq: f.inserted.seq,
        claimedAt: claimed.get(f.row.messageId)?.at,
      })),
      deletedAt < 0 ? undefined : s.events[deletedAt]!.seq,
      // every time of the window that passed before the client's last look (an alarm run as the
      // platform would, then its removal) was delivered or stood for
      removal?.kind === "unschedule-end" ? lastLook(ev, ref, removal) : undefined,
      count,
      flag,
    );
  }
}

/** When the client last let the root's alarm run before removing the schedule after the drain. */
function lastLook(ev: Evidence, ref: string, removal: Op): number | undefined {
  const alarm = ev.history.filter((o) => o.kind === "alarm" && o.target === ref && o.id < removal.id).at(-1);
  return alarm?.outcome === "ok" ? alarm.wall?.start : undefined;
}

export interface Firing {
  /** Its firing time (the source's `at`). */
  at: number;
  insertedAt: number;
  insertedSeq: number;
  claimedAt: number | undefined;
}

/** One schedule's firings (in log order) against its window `times`. */
export function checkFirings(
  id: string,
  label: string,
  times: readonly number[],
  fired: readonly Firing[],
  deletedSeq: number | undefined,
  passedBy: number | undefined,
  count: (what: string) => void,
  flag: ControlFlag,
): void {
  const seen = new Set<number>();
  for (const [k, f] of fired.entries()) {
    if (seen.has(f.at)) flag("duplicated", id, `${label}: firing time ${f.at} delivered twice`);
    seen.add(f.at);
    if (!times.includes(f.at)) flag("unexpected", id, `${label}: a firing at ${f.at}, no time of its cron`);
    if (f.insertedAt < f.at)
      flag("wrong", id, `${label}: the firing of ${f.at} came ${f.at - f.insertedAt} ms early`);
    if (deletedSeq !== undefined && f.insertedSeq > deletedSeq)
      flag("unexpected", id, `${label}: a firing (${f.at}) after the schedule was deleted`);
    if (k === 0 && f.at !== times[0])
      flag("lost", id, `${label}: its first firing is ${f.at}, not ${times[0]}`);
    const prior = fired[k - 1];
    if (prior && f.at <= prior.at) flag("wrong", id, `${label}: firing ${f.at} after ${prior.at}`);
    // missed periods once: the next time is the first after the previous firing happened
    else if (prior && f.at <= prior.insertedAt - 1_000)
      flag(
        "duplicated",
        id,
        `${label}: a missed period (${f.at}) delivered after the firing at ${prior.insertedAt} already stood for it`,
      );
  }
  if (passedBy === undefined) return;
  const last = fired.at(-1);
  const remaining = times.filter((w) => w <= passedBy && (last === undefined || w > last.insertedAt));
  if (remaining.length === 0) {
    count("a schedule fired every time that passed, once");
    return;
  }
  // a firing while the previous firing's message still waits adds none: it stood for these
  if (last?.claimedAt !== undefined && last.claimedAt >= Math.max(...remaining)) {
    count("a schedule's waiting message stood for later times");
    return;
  }
  flag("lost", id, `${label}: the times ${remaining.join(", ")} passed and none fired`);
}

/** A child started with a deadline: its run (one-shot) or each of its turns (continuable). */
function checkDeadline(
  ev: Evidence,
  child: ControlChild,
  count: (what: string) => void,
  flag: ControlFlag,
): void {
  const seconds = child.deadlineSeconds!;
  // its start, retried when cut off: acknowledged by one attempt, accepted no earlier than the first
  const attempts = ev.history.filter((o) => o.kind.startsWith("start-deadline") && o.target === child.ref);
  const started = attempts.find((o) => o.outcome === "ok");
  const sent = Math.min(...attempts.map((o) => o.wall?.start ?? Number.POSITIVE_INFINITY));
  const parentId = ev.ids.get(child.parent);
  const parent = parentId === undefined ? undefined : ev.sessions.get(parentId);
  if (!started?.wall || !parentId || !parent) return;
  if (child.mode === "continuable") {
    const s = ev.sessions.get(child.id);
    if (!s?.header) {
      flag("lost", child.id, `acknowledged continuable ${child.ref} does not exist`);
      return;
    }
    checkTurnEnds(ev, child.id, s.events, new Set(), turnDeadline(seconds), count, flag, seconds * 1000);
    // its settlement notice says so when its last turn ended by its deadline
    const last = s.events.findLast((e) => e.type === "turn/end");
    const notice = parent.inbox
      .filter((r) => r.source?.kind === "subagent-settled" && textOf(r.content).includes(child.id))
      .at(-1);
    if (
      String(last?.data.cause ?? "").startsWith("deadline passed:") &&
      notice &&
      !textOf(notice.content).includes("deadline passed")
    )
      flag("wrong", parentId, `the settlement notice of ${child.ref} does not say its deadline passed`);
    return;
  }
  const runId = String(started.result?.runId);
  const run = parent.runs.find((r) => r.runId === runId);
  const end = parent.events.find((e) => e.type === "subagent/end" && e.data.runId === runId);
  if (run?.state !== "settled" || !run.result || !end) return; // `stuck` or `lost` already
  checkRunDeadline(
    ev,
    { parentId, childId: child.id, runId, ref: child.ref },
    run.result,
    seconds,
    { start: sent, end: end.at },
    (started.input?.answers ?? []) as string[],
    count,
    flag,
  );
}

/** A run started with a deadline of `seconds`, accepted from `span.start` and settled at `span.end`. */
export function checkRunDeadline(
  ev: Evidence,
  run: { parentId: string; childId: string; runId: string; ref: string },
  result: { output?: unknown; stopReason?: string; diagnostic?: string },
  seconds: number,
  span: Span,
  answers: readonly string[],
  count: (what: string) => void,
  flag: ControlFlag,
): void {
  const reason = result.stopReason ?? "?";
  const diagnostic = String(result.diagnostic ?? "");
  const label = `run of ${run.ref}`;
  if (reason === "completed") {
    if (!answers.includes(textOf(result.output)))
      flag("wrong", run.parentId, `${label} completed with ${JSON.stringify(textOf(result.output))}`);
    else count("a run with a deadline completed in time");
    return;
  }
  if (reason === "aborted" && diagnostic.startsWith("deadline passed:")) {
    if (diagnostic !== runDeadline(seconds))
      flag("wrong", run.parentId, `${label} ended "${diagnostic}", not "${runDeadline(seconds)}"`);
    else if (span.end - span.start < seconds * 1000)
      flag(
        "wrong",
        run.parentId,
        `${label} ended by its deadline ${span.end - span.start} ms after it was sent`,
      );
    else count("a run ended by its deadline");
    return;
  }
  const why = explainEnd(ev, run.childId, reason, diagnostic, span, run);
  if (why) count(`a run with a deadline ended ${reason}: ${why}`);
  else flag("wrong", run.parentId, `${label} ended ${reason} (${diagnostic}) unexplained`);
}

/** A foreground `subagent` call of the steering root with `deadline_seconds`: its result. */
function checkForegroundDeadlines(
  ev: Evidence,
  id: string,
  s: Snapshot,
  count: (what: string) => void,
  flag: ControlFlag,
): void {
  for (const [i, e] of s.events.entries()) {
    if (e.type !== "assistant/message") continue;
    for (const call of (e.data.toolCalls ?? []) as { id: string; name: string; args: any }[]) {
      if (call.name !== "subagent" || call.args?.deadline_seconds === undefined) continue;
      const result = s.events
        .slice(i + 1)
        .find(
          (x, j, rest) =>
            x.type === "tool/result" &&
            x.data.toolCallId === call.id &&
            !rest.slice(0, j).some((y) => y.type === "turn/start"),
        );
      if (!result) continue; // its turn ended first: the run was cancelled with it
      const text = textOf(result.data.content);
      const answer = expectedAnswer(String(call.args.prompt));
      const diagnostic = runDeadline(Number(call.args.deadline_seconds));
      // a start refused (no child) or a run cut short by a fault there says so instead
      const span: Span = { start: e.at, end: result.at };
      const fault = result.data.isError
        ? (injectedFault(ev, refOf(ev, id), span, text) ?? cutByReset(ev, refOf(ev, id), span, text))
        : undefined;
      if (result.data.isError ? text.includes(`Diagnostic: ${diagnostic}`) : text === answer)
        count(
          `a foreground call with deadline_seconds read ${result.data.isError ? "its deadline" : "its answer"}`,
        );
      else if (fault) count(`a foreground call with deadline_seconds failed: ${fault}`);
      else
        flag(
          "wrong",
          id,
          `the foreground call ${call.id} with deadline_seconds read ${JSON.stringify(text)}`,
        );
    }
  }
}

/**
 * The deleted tree: routes 404 from the deletion's 202 on; once quiet, nothing of any member left
 * (no table, no row, no alarm, no session of the tree), and the directory forgot the root.
 */
function checkDeletion(
  ev: Evidence,
  id: string,
  evidence: ControlEvidence | undefined,
  count: (what: string) => void,
  flag: ControlFlag,
): void {
  const deletes = ev.history.filter((o) => o.target === DOOMED_ROOT && o.kind.startsWith("delete"));
  if (deletes.length === 0) return;
  const acked = deletes.find((o) => o.outcome === "ok");
  const s = ev.sessions.get(id);
  const landed =
    acked !== undefined ||
    deletes.some((o) => o.status === 404) ||
    (deletes.some((o) => o.outcome === "ambiguous") && !s?.header);
  if (!landed) {
    count("a deletion cut off that never landed");
    return;
  }
  for (const probe of ev.history.filter((o) => o.kind === "probe-deleted" && o.target === DOOMED_ROOT))
    for (const [ref, statuses] of Object.entries((probe.result?.statuses ?? {}) as Record<string, number[]>))
      if (statuses.some((status) => status !== 404))
        flag(
          "wrong",
          ev.ids.get(ref) ?? ref,
          `${ref} answered ${statuses.join(",")} right after its tree's deletion was accepted`,
        );
  if (acked) {
    // nothing of the tree is acknowledged once its deletion was (sent after its answer came)
    const after = ev.history.filter(
      (o) =>
        o.outcome === "ok" &&
        o.start > acked.end &&
        (o.target === DOOMED_ROOT ||
          (ev.scenario.control?.children ?? []).some(
            (c) => c.ref === o.target && c.parent === DOOMED_ROOT,
          )) &&
        (MESSAGE_KINDS.has(o.kind) || o.kind.startsWith("start")),
    );
    for (const op of after)
      flag("unexpected", id, `${op.kind} #${op.id} acknowledged after the tree's deletion`);
  }
  if (!evidence) return;
  for (const [ref, statuses] of Object.entries(evidence.routes))
    if (statuses.some((status) => status !== 404))
      flag(
        "wrong",
        ev.ids.get(ref) ?? ref,
        `${ref} answers ${statuses.join(",")} after its tree was deleted`,
      );
  for (const [ref, remains] of Object.entries(evidence.remains)) {
    const kept = Object.entries(remains.tables).map(([table, n]) => `${table} (${n} rows)`);
    if (kept.length > 0 || remains.alarm !== null)
      flag(
        "stuck",
        ev.ids.get(ref) ?? ref,
        `deleted ${ref} keeps ${[...kept, ...(remains.alarm === null ? [] : [`an alarm at ${remains.alarm}`])].join(", ")}`,
      );
  }
  for (const [member, snapshot] of ev.sessions) {
    const line = snapshot.header?.lineage as string[] | undefined;
    if (snapshot.header && (member === id || line?.includes(id)))
      flag("stuck", member, `a session of the deleted tree of ${DOOMED_ROOT} is still there`);
  }
  if (evidence.listed) flag("wrong", id, "the directory still lists the deleted root");
  else count(`a tree deleted (${Object.keys(evidence.remains).length} members erased)`);
}

/**
 * A refusal the contract gives an operation of the control steps in the state the history put its
 * session in: any route of a tree whose deletion was under way answers 404.
 */
export function controlRefusal(ev: Evidence, op: Op): string | undefined {
  const plan = ev.scenario.control;
  if (!plan) return undefined;
  // a follow-up to a child none of whose starts was acknowledged before it: an unknown child
  if (op.kind === "followup-deadline" && op.status === 422 && op.code === "NOT_RESUMABLE") {
    const started = ev.history.some(
      (o) => o.target === op.target && o.kind.startsWith("start") && o.outcome === "ok" && o.end <= op.start,
    );
    return started ? undefined : "its child's start was never acknowledged";
  }
  if (op.status !== 404) return undefined;
  const doomed = new Set([
    DOOMED_ROOT,
    ...plan.children.filter((c) => c.parent === DOOMED_ROOT).map((c) => c.ref),
  ]);
  if (!doomed.has(op.target) && ![...doomed].some((ref) => op.target.startsWith(`m:${ref}:`)))
    return undefined;
  const deletion = ev.history.find(
    (o) =>
      o !== op &&
      o.target === DOOMED_ROOT &&
      o.kind.startsWith("delete") &&
      o.outcome !== "fail" &&
      o.start <= op.end,
  );
  return deletion ? "its tree was being deleted" : undefined;
}
