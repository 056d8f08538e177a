import {
  type AnswerTally,
  checkChildAnswers,
  checkMessageAnswers,
  checkRunAnswer,
  emptyTally,
} from "./answers";
import type { Op } from "./harness";
import type { ChildSpec, Scenario } from "./scenario";
import type { InboxRow, LogEvent, Snapshot } from "./snapshot";

/**
 * The checker: after the drain, every session's tables against the history of operations.
 * Categories (reliability.md, "Measuring it"):
 *   lost        an acknowledged message or start whose effect is absent
 *   duplicated  an effect that happened twice (an answer, a start, an end, a claim, an envelope)
 *   unexpected  an effect no operation explains
 *   orphaned    a live child whose parent has no children row for it
 *   stuck       work owed that nothing will ever run (outbox rows, unsettled runs, open turns...)
 *   seq-gaps    a log whose seq is not contiguous from 0
 *   wrong       an acknowledged operation whose outcome is not what the ledger says (answers.ts)
 *               and nothing the schedule did explains
 */

export const CATEGORIES = [
  "lost",
  "duplicated",
  "unexpected",
  "orphaned",
  "stuck",
  "seq-gaps",
  "wrong",
] as const;
export type Category = (typeof CATEGORIES)[number];

export interface Violation {
  category: Category;
  /** The session reference (r0, h1, m:r0:0) or id. */
  session: string;
  message: string;
}

export interface CheckInput {
  scenario: Scenario;
  history: readonly Op[];
  /** Reference -> session id. */
  ids: ReadonlyMap<string, string>;
  /** Every object the seed created, by session id (objects without a header keyed by object id). */
  sessions: ReadonlyMap<string, Snapshot>;
  /** The ids the registry's session directory lists, of those the seed's roots were given. */
  directory?: ReadonlySet<string>;
}

export interface CheckResult {
  violations: Violation[];
  /** Facts that are not violations but worth reporting (abandoned starts, dead letters to nowhere). */
  notes: string[];
  /** Acknowledged operations compared with the ledger of answers, and how they came out. */
  answers: AnswerTally;
}

const TAG = /s\d+-\d+/;

export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b: { text?: string }) => b.text ?? "").join("");
}

function ofType(events: readonly LogEvent[], type: string): LogEvent[] {
  return events.filter((e) => e.type === type);
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (const item of items) out.set(key(item), (out.get(key(item)) ?? 0) + 1);
  return out;
}

export function check(input: CheckInput): CheckResult {
  const { scenario, history, ids, sessions } = input;
  const violations: Violation[] = [];
  const notes: string[] = [];
  const answers = emptyTally();
  const refOf = (id: string): string => {
    for (const [ref, value] of ids) if (value === id) return ref;
    return id.slice(0, 8);
  };
  const flag = (category: Category, id: string, message: string): void => {
    violations.push({ category, session: refOf(id), message });
  };
  const get = (id: string | undefined): Snapshot | undefined =>
    id === undefined ? undefined : sessions.get(id);
  const httpChildren = new Map<string, ChildSpec>(scenario.children.map((c) => [c.id, c]));
  const opsOn = (ref: string, ...kinds: string[]): Op[] =>
    history.filter((o) => o.target === ref && kinds.includes(o.kind));

  for (const [id, s] of sessions) {
    if (!s.header) {
      // an object that never became a session: it may only hold a cancel tombstone
      if (s.events.length > 0 || s.inbox.length > 0)
        flag("unexpected", id, "events in an object with no header");
      continue;
    }
    checkLog(id, s, flag);
    const alarmLost = scenario.rules.some((r) => r.kind === "lost-alarm" && ids.get(r.scope) === id);
    checkOwed(id, s, get, flag, notes, alarmLost);
    // the schedule delegates only in this deployment: no far-side or ACP transport may exist
    for (const t of s.transports)
      flag("unexpected", id, `a ${t.table} row for run ${t.runId} no operation made`);
  }

  // ---- roots: every user message is an operation's; every acknowledged one was taken ----
  for (const root of scenario.roots) {
    const id = ids.get(root.ref);
    const s = get(id);
    if (!id || !s?.header) {
      if (history.some((o) => o.kind === "create" && o.target === root.ref && o.outcome === "ok"))
        flag("lost", id ?? root.ref, "a created session has no header");
      continue;
    }
    if (input.directory && !input.directory.has(id))
      flag("lost", id, "a created top-level session is absent from the registry's session directory");
    const sends = opsOn(root.ref, "send", "resend", "flush", "retry");
    const byKey = new Map<string, Op[]>();
    for (const op of sends) {
      const key = String(op.input?.key);
      byKey.set(key, [...(byKey.get(key) ?? []), op]);
    }
    const conflicts = opsOn(root.ref, "conflict");
    for (const row of s.inbox) {
      if (row.source?.kind !== "user") continue;
      const ops = row.idempotencyKey ? byKey.get(row.idempotencyKey) : undefined;
      if (!ops) {
        flag("unexpected", id, `user message ${row.messageId} (key ${row.idempotencyKey}) matches no send`);
        continue;
      }
      // the body of an operation under this key that may have landed (a refused one did not)
      const landed = [...ops, ...conflicts.filter((o) => o.input?.key === row.idempotencyKey)]
        .filter((o) => o.outcome !== "fail")
        .map((o) => String(o.input?.content));
      if (!landed.includes(textOf(row.content)))
        flag("unexpected", id, `message ${row.messageId} holds content no send with its key sent`);
    }
    for (const [key, ops] of byKey) {
      const rows = s.inbox.filter((r) => r.idempotencyKey === key);
      const acked = ops.filter((o) => o.outcome === "ok");
      const messageIds = new Set(acked.map((o) => String(o.result?.messageId)));
      if (acked.length > 0 && rows.length === 0)
        flag("lost", id, `acknowledged message with key ${key} absent`);
      if (messageIds.size > 1)
        flag("duplicated", id, `key ${key} answered with ${messageIds.size} message ids: ${[...messageIds]}`);
      const row = rows[0];
      if (row && acked.length > 0 && !messageIds.has(row.messageId))
        flag("lost", id, `key ${key} acknowledged as ${[...messageIds]} but stored as ${row.messageId}`);
    }
    checkMessageAnswers(id, root.ref, s, sends, scenario, history, answers, flag);
    for (const op of conflicts) {
      // a changed body under a key is refused once the key's first body landed; when that one was
      // refused itself (a storage failure, say), the changed body is the key's first use
      const firstLanded = (byKey.get(String(op.input?.key)) ?? []).some(
        (o) => o.outcome === "ok" && o.end <= op.start,
      );
      const stored = s.inbox.find((r) => r.idempotencyKey === op.input?.key);
      const otherBody = stored !== undefined && textOf(stored.content) !== String(op.input?.content);
      if (op.outcome === "ok" && (firstLanded || otherBody))
        flag("duplicated", id, `a different body under key ${op.input?.key} was accepted`);
      else if (op.status !== 422) notes.push(`conflict on ${root.ref} answered ${op.status} ${op.code}`);
    }
  }
  for (const [id, s] of sessions) if (s.header) checkModelDelegation(id, s, get, httpChildren, flag);

  // ---- HTTP-started children ----
  for (const child of scenario.children) {
    const parentId = ids.get(child.root);
    const parent = get(parentId);
    if (!parentId || !parent?.header) continue;
    const startKind = child.mode === "one-shot" ? "start-one-shot" : "start-continuable";
    const starts = history.filter((o) => o.kind === startKind && o.target === child.ref);
    const c = get(child.id);
    const row = parent.children.find((r) => r.childId === child.id);
    const startEvents = ofType(parent.events, "subagent/start").filter((e) => e.data.id === child.id);
    const endEvents = ofType(parent.events, "subagent/end").filter((e) => e.data.id === child.id);
    const acked = starts.find((o) => o.outcome === "ok");
    const attempted = starts.some((o) => o.outcome !== "fail");
    if (!attempted) {
      if (row || startEvents.length > 0)
        flag("unexpected", parentId, `child ${child.ref} is recorded although every start failed`);
      if (c?.header && c.header.parentSession === parentId && isLive(c))
        flag("unexpected", child.id, "a child whose start failed is running");
      continue;
    }
    if (child.mode === "one-shot") {
      const runId = acked ? String(acked.result?.runId) : c?.header?.oneShot?.runId;
      if (acked) {
        const run = parent.runs.find((r) => r.runId === runId);
        if (!run) flag("lost", parentId, `acknowledged run ${runId} (${child.ref}) has no run row`);
        if (!startEvents.some((e) => e.data.runId === runId))
          flag("lost", parentId, `acknowledged run ${runId} (${child.ref}) has no subagent/start`);
        if (!endEvents.some((e) => e.data.runId === runId))
          flag("lost", parentId, `acknowledged run ${runId} (${child.ref}) has no subagent/end`);
        if (c?.header?.oneShot?.runId !== runId)
          flag("lost", child.id, `acknowledged run ${runId} has no child session answering it`);
        const scripted = acked.input?.answers;
        if (run?.state === "settled" && Array.isArray(scripted))
          checkRunAnswer(
            parentId,
            child.ref,
            run.result,
            scripted as string[],
            scenario,
            history,
            answers,
            flag,
          );
      }
      if (startEvents.length > 1)
        flag("duplicated", parentId, `${child.ref} started ${startEvents.length} times`);
    } else {
      if (acked) {
        if (!row) flag("lost", parentId, `acknowledged continuable ${child.ref} has no children row`);
        if (startEvents.length === 0)
          flag("lost", parentId, `acknowledged continuable ${child.ref} has no start`);
        const messageId = String(acked.result?.messageId);
        if (!c?.inbox.some((r) => r.messageId === messageId))
          flag("lost", child.id, `acknowledged first message ${messageId} absent`);
      }
      const followups = opsOn(child.ref, "followup");
      const relays = ofType(parent.events, "assistant/message")
        .flatMap((e) => (e.data.toolCalls ?? []) as { name: string; args: { subagent_id?: string } }[])
        .filter((c) => c.name === "send_message" && c.args.subagent_id === child.id).length;
      const possible = 1 + followups.filter((o) => o.outcome !== "fail").length + relays;
      if (startEvents.length > possible)
        flag(
          "unexpected",
          parentId,
          `${startEvents.length} epochs of ${child.ref} for ${possible} deliveries`,
        );
      for (const op of followups.filter((o) => o.outcome === "ok")) {
        const messageId = String(op.result?.messageId);
        if (!c?.inbox.some((r) => r.messageId === messageId))
          flag("lost", child.id, `acknowledged follow-up ${messageId} absent`);
      }
      if (c?.header)
        checkChildAnswers(
          child.id,
          child.ref,
          c,
          [...(acked ? [acked] : []), ...followups],
          scenario,
          history,
          answers,
          flag,
        );
      const delivered =
        c?.inbox.filter((r) => r.source?.kind === "user" || r.source?.kind === "coordinator") ?? [];
      if (delivered.length > possible)
        flag("unexpected", child.id, `${delivered.length} parent messages for ${possible} deliveries`);
    }
    if (!acked && !row && c?.header) {
      // an ambiguous start the parent forgot: the child must have been stopped, never left running
      if (isLive(c)) flag("orphaned", child.id, "a forgotten start left a live child");
      else notes.push(`${child.ref}: an ambiguous start landed and was cancelled`);
    }
  }

  // ---- every child session has its parent's row (or was stopped when its start was forgotten) ----
  for (const [id, s] of sessions) {
    const parentId = s.header?.parentSession;
    if (!parentId) {
      if (s.header && ![...ids.values()].includes(id))
        flag("unexpected", id, "a top-level session no operation created");
      continue;
    }
    const parent = get(parentId);
    if (!parent?.header) {
      flag("orphaned", id, `parent ${refOf(parentId)} does not exist`);
      continue;
    }
    if (parent.children.some((r) => r.childId === id)) continue;
    if (isLive(s)) flag("orphaned", id, `parent ${refOf(parentId)} has no children row for this live child`);
    else if (!httpChildren.has(id))
      notes.push(`model child ${id.slice(0, 8)} of ${refOf(parentId)} landed after its start was forgotten`);
  }

  return { violations, notes, answers };
}

/** Work a session still owns or owes. */
function isLive(s: Snapshot): boolean {
  return (
    s.activation !== null ||
    (s.loop?.openTurn ?? null) !== null ||
    s.inbox.some((r) => r.state === "pending" && r.waking) ||
    s.outbox.some((r) => r.deliveredAt === null && r.deadAt === null)
  );
}

type Flag = (
  category: "lost" | "duplicated" | "unexpected" | "orphaned" | "stuck" | "seq-gaps",
  id: string,
  message: string,
) => void;

/** One log on its own: contiguous seq, unique claims and lifecycle edges, well-formed turns, single answers. */
function checkLog(id: string, s: Snapshot, flag: Flag): void {
  const { events } = s;
  const gap = events.findIndex((e, i) => e.seq !== i);
  if (gap >= 0) flag("seq-gaps", id, `seq ${events[gap]!.seq} at position ${gap}`);

  for (const [type, field] of [
    ["agent/inbox/inserted", "messageId"],
    ["agent/inbox/claimed", "messageId"],
    ["agent/inbox/discarded", "messageId"],
    ["user/message", "messageId"],
    ["subagent/start", "runId"],
    ["subagent/end", "runId"],
  ] as const) {
    for (const [value, n] of countBy(ofType(events, type), (e) => String(e.data[field])))
      if (n > 1) flag("duplicated", id, `${n} ${type} events for ${field} ${value}`);
  }
  const started = new Set(ofType(events, "subagent/start").map((e) => String(e.data.runId)));
  for (const start of ofType(events, "subagent/start")) {
    if (!s.children.some((c) => c.childId === start.data.id))
      flag(
        "unexpected",
        id,
        `subagent/start for ${String(start.data.id).slice(0, 8)}, which is no child of it`,
      );
  }
  for (const end of ofType(events, "subagent/end")) {
    if (!started.has(String(end.data.runId)))
      flag("unexpected", id, `subagent/end for run ${end.data.runId} that never started (seq ${end.seq})`);
  }
  if (ofType(events, "subagent/descriptor").length > 1) flag("duplicated", id, "more than one descriptor");

  // inbox rows and their events agree
  const inserted = new Set(ofType(events, "agent/inbox/inserted").map((e) => String(e.data.messageId)));
  const claimed = new Set(ofType(events, "agent/inbox/claimed").map((e) => String(e.data.messageId)));
  const discarded = new Set(ofType(events, "agent/inbox/discarded").map((e) => String(e.data.messageId)));
  const rows = new Map<string, InboxRow>(s.inbox.map((r) => [r.messageId, r]));
  for (const row of s.inbox) {
    if (!inserted.has(row.messageId)) flag("unexpected", id, `inbox row ${row.messageId} without its event`);
    if (row.state === "claimed" && !claimed.has(row.messageId))
      flag("lost", id, `claimed row ${row.messageId} has no claimed event`);
    if (row.state === "discarded" && !discarded.has(row.messageId))
      flag("lost", id, `discarded row ${row.messageId} has no discarded event`);
  }
  for (const messageId of [...inserted, ...claimed]) {
    if (!rows.has(messageId)) flag("unexpected", id, `event for message ${messageId} with no inbox row`);
  }

  // turns: never overlapping, each started by a claim, tool results matching calls
  let open: { turn: number; calls: Set<string>; results: Set<string> } | undefined;
  const ended = new Set<number>();
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.type === "turn/start") {
      if (open) flag("duplicated", id, `turn ${e.data.turn} started while turn ${open.turn} was open`);
      open = { turn: Number(e.data.turn), calls: new Set(), results: new Set() };
      if (events[i + 1]?.type !== "agent/inbox/claimed")
        flag("unexpected", id, `turn ${e.data.turn} (seq ${e.seq}) claimed no message`);
    } else if (e.type === "turn/end") {
      const turn = Number(e.data.turn);
      if (ended.has(turn)) flag("duplicated", id, `two turn/end for turn ${turn}`);
      ended.add(turn);
      if (!open || open.turn !== turn) flag("unexpected", id, `turn/end for turn ${turn} with no open turn`);
      open = undefined;
    } else if (e.type === "assistant/message") {
      if (!open) flag("unexpected", id, `assistant message outside a turn (seq ${e.seq})`);
      for (const call of (e.data.toolCalls ?? []) as { id: string }[]) {
        if (open?.calls.has(call.id)) flag("duplicated", id, `tool call ${call.id} appended twice in a turn`);
        open?.calls.add(call.id);
      }
    } else if (e.type === "tool/result") {
      const callId = String(e.data.toolCallId);
      if (!open?.calls.has(callId)) flag("unexpected", id, `tool result for unknown call ${callId}`);
      if (open?.results.has(callId)) flag("duplicated", id, `two results for tool call ${callId}`);
      open?.results.add(callId);
    }
  }

  // every tagged answer is unique: a second copy is a duplicated model step
  const answers = ofType(events, "assistant/message")
    .map((e) => textOf(e.data.content))
    .filter((t) => TAG.test(t));
  for (const [text, n] of countBy(answers, (t) => t))
    if (n > 1) flag("duplicated", id, `answer ${JSON.stringify(text.slice(0, 80))} appended ${n} times`);
  // a report (child -> parent) or a relay (parent -> child) is sent once per tool call
  const relayed = s.inbox
    .filter((r) => r.source?.kind === "subagent-report" || r.source?.kind === "coordinator")
    .map((r) => textOf(r.content));
  for (const [text, n] of countBy(relayed, (t) => t))
    if (n > 1)
      flag("duplicated", id, `relayed message ${JSON.stringify(text.slice(0, 80))} received ${n} times`);

  // a one-shot child answers one prompt in one turn
  if (s.header?.mode === "one-shot") {
    if (s.inbox.length > 1) flag("unexpected", id, `a one-shot child holds ${s.inbox.length} messages`);
    if (ofType(events, "turn/start").length > 1)
      flag("duplicated", id, "a one-shot child ran more than one turn");
  }
}

/** What a quiescent session may not still owe, and what its outbox must have achieved. */
function checkOwed(
  id: string,
  s: Snapshot,
  get: (id: string) => Snapshot | undefined,
  flag: Flag,
  notes: string[],
  alarmLost: boolean,
): void {
  if (s.loop?.openTurn !== null && s.loop?.openTurn !== undefined)
    flag("stuck", id, `turn ${s.loop.openTurn} never ended`);
  // after the drains and the wake-up of parked work, an accepted message is claimed or discarded
  for (const row of s.inbox.filter((r) => r.state === "pending"))
    flag(
      "lost",
      id,
      `accepted message ${row.messageId} was never claimed nor discarded (parked: ${s.loop?.parked === true})`,
    );
  for (const row of s.outbox) {
    const target = get(row.target);
    if (row.deliveredAt === null && row.deadAt === null) {
      // An envelope the receiver applied, whose send looked failed (it was retried), and whose
      // sender's alarm was then lost: the sender marks it delivered when it next wakes (a boot, a
      // request, a parent's watchdog). Nobody waits for it, so nothing woke it: owed bookkeeping,
      // nothing lost.
      if (alarmLost && row.attempts > 0 && target?.seen.includes(row.id)) {
        notes.push(
          `outbox ${row.id}: applied, its sender's bookkeeping waits for its next wake-up (lost alarm)`,
        );
        continue;
      }
      flag(
        "stuck",
        id,
        `outbox ${row.id} -> ${row.target.slice(0, 8)} neither delivered nor dead (${row.lastError})`,
      );
    } else if (row.deadAt !== null) {
      if (target?.header)
        flag("lost", id, `outbox ${row.id} dead-lettered after ${row.attempts}: ${row.lastError}`);
      else notes.push(`outbox ${row.id} dead-lettered: target never existed`);
    } else if (row.kind === "cancel-run" && !target?.header) {
      if (!target || target.flags[`cancelled:${row.envelope?.runId}`] === undefined)
        flag("lost", id, `cancel ${row.id} delivered to a missing child left no tombstone`);
    } else if (!target?.seen.includes(row.id)) {
      flag("lost", id, `outbox ${row.id} marked delivered but ${row.target.slice(0, 8)} never applied it`);
    }
  }
  for (const run of s.runs) {
    if (run.state === "settled") continue;
    const child = get(run.childId);
    const finished = child?.outbox.some((r) => r.id === `result:${run.runId}`);
    flag("stuck", id, `run ${run.runId} is ${run.state}${finished ? " although its child finished" : ""}`);
  }
  for (const epoch of s.epochs) {
    if (epoch.state === "ended") continue;
    const child = get(epoch.childId);
    const live = child?.activation?.runId === epoch.runId;
    flag(
      "stuck",
      id,
      `epoch ${epoch.runId} of ${epoch.childId.slice(0, 8)} is ${epoch.state}${epoch.pendingNotice ? " with a held notice" : ""}${live ? "" : " although the child settled it"}`,
    );
  }
  for (const row of s.children) {
    if (row.state === "owned")
      flag("stuck", id, `child ${row.childId.slice(0, 8)} (${row.mode}) is still owned`);
  }
  if (s.activation) flag("stuck", id, `continuable epoch ${s.activation.epoch} never settled`);
}

/** A session's model-started children: one child per tool call, each started; reports arrived. */
function checkModelDelegation(
  id: string,
  s: Snapshot,
  get: (id: string) => Snapshot | undefined,
  http: ReadonlyMap<string, ChildSpec>,
  flag: Flag,
): void {
  const calls = ofType(s.events, "assistant/message").flatMap(
    (e) => (e.data.toolCalls ?? []) as { id: string; name: string; args: { description?: string } }[],
  );
  const subagentCalls = calls.filter((c) => c.name === "subagent");
  const modelChildren = s.children.filter((c) => !http.has(c.childId));
  const distinct = new Set(subagentCalls.map((c) => c.args.description));
  if (modelChildren.length > subagentCalls.length)
    flag(
      "unexpected",
      id,
      `${modelChildren.length} model children for ${subagentCalls.length} subagent calls`,
    );
  for (const [label, n] of countBy(modelChildren, (c) => String(c.label)))
    if (n > 1 && distinct.has(label))
      flag("duplicated", id, `one subagent call (${label}) started ${n} children`);
  const starts = new Set(ofType(s.events, "subagent/start").map((e) => String(e.data.id)));
  for (const result of ofType(s.events, "tool/result")) {
    const text = textOf(result.data.content);
    const continuable = /^started subagent ([0-9a-f-]{36})$/.exec(text);
    if (continuable) {
      const childId = continuable[1]!;
      if (!s.children.some((c) => c.childId === childId))
        flag("lost", id, `started child ${childId.slice(0, 8)} has no children row`);
      if (!starts.has(childId))
        flag("lost", id, `started child ${childId.slice(0, 8)} has no subagent/start`);
      if (!get(childId)?.header) flag("lost", id, `started child ${childId.slice(0, 8)} does not exist`);
    }
    const task = /^started background subagent task (subagent-\d+)$/.exec(text);
    if (task) {
      const run = s.runs.find((r) => r.taskId === task[1]);
      if (!run) flag("lost", id, `background task ${task[1]} has no run`);
      else if (!starts.has(run.childId)) flag("lost", id, `background task ${task[1]} has no subagent/start`);
    }
  }
  // a report the child was told was accepted reached this session
  for (const c of s.children) {
    const child = get(c.childId);
    if (!child) continue;
    for (const result of ofType(child.events, "tool/result")) {
      const accepted = /as message (\S+)$/.exec(textOf(result.data.content));
      if (accepted && !s.inbox.some((r) => r.messageId === accepted[1]))
        flag("lost", id, `report ${accepted[1]} accepted for ${c.childId.slice(0, 8)} is absent`);
    }
  }
}
