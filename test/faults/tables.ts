import type { ChildSpec } from "./scenario";
import type { InboxRow, LogEvent, Snapshot } from "./snapshot";

/**
 * The checks of one session's tables on their own (its log, what it still owes, the children its
 * model started): what no history can excuse.
 */

const TAG = /s\d+-\d+/;

export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b: { text?: string }) => b.text ?? "").join("");
}

export function ofType(events: readonly LogEvent[], type: string): LogEvent[] {
  return events.filter((e) => e.type === type);
}

export function countBy<T>(items: readonly T[], key: (item: T) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (const item of items) out.set(key(item), (out.get(key(item)) ?? 0) + 1);
  return out;
}

/** Work a session still owns or owes. */
export function isLive(s: Snapshot): boolean {
  return (
    s.activation !== null ||
    (s.loop?.openTurn ?? null) !== null ||
    s.inbox.some((r) => r.state === "pending" && r.waking) ||
    s.outbox.some((r) => r.deliveredAt === null && r.deadAt === null)
  );
}

export type Flag = (
  category: "lost" | "duplicated" | "unexpected" | "orphaned" | "stuck" | "seq-gaps",
  id: string,
  message: string,
) => void;

/** One log on its own: contiguous seq, unique claims and lifecycle edges, well-formed turns, single answers. */
export function checkLog(id: string, s: Snapshot, flag: Flag): void {
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
export function checkOwed(
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
      if (!target || target.cancelledRuns[String(row.envelope?.runId)] === undefined)
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
export function checkModelDelegation(
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
