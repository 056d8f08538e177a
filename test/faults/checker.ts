import {
  type AnswerTally,
  checkChildAnswers,
  checkMessageAnswers,
  checkRunAnswer,
  emptyTally,
} from "./answers";
import { checkApprovals } from "./approvals";
import { checkControl } from "./control";
import type { ControlEvidence } from "./control-run";
import type { Evidence } from "./explanations";
import type { Fired, Op, Reset } from "./harness";
import { checkModelChildren } from "./model-children";
import { checkOperations } from "./refusals";
import type { ChildSpec, Scenario } from "./scenario";
import type { Snapshot } from "./snapshot";
import { checkLog, checkModelDelegation, checkOwed, isLive, ofType, textOf } from "./tables";

/**
 * The checker: after the drain, every session's tables against the history of operations.
 * Categories (README, Reliability: "Measuring it"):
 *   lost        an acknowledged message or start whose effect is absent
 *   duplicated  an effect that happened twice (an answer, a start, an end, a claim, an envelope)
 *   unexpected  an effect no operation explains
 *   orphaned    a live child whose parent has no children row for it
 *   stuck       work owed that nothing will ever run (outbox rows, unsettled runs, open turns...)
 *   seq-gaps    a log whose seq is not contiguous from 0
 *   wrong       an acknowledged operation whose outcome is not what the ledger says (answers.ts,
 *               model-children.ts), or an operation refused or cut off (refusals.ts), that no
 *               cause in the history explains (explanations.ts)
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
  /** The faults that fired, with when: the causes that may explain an outcome (none when absent). */
  fired?: readonly Fired[];
  /** The resets the reaper made after `abort` rules fired. */
  resets?: readonly Reset[];
  /** What the doomed tree's members keep once quiet (control-run.ts). */
  control?: ControlEvidence;
}

export interface CheckResult {
  violations: Violation[];
  /** Facts that are not violations but worth reporting (abandoned starts, dead letters to nowhere). */
  notes: string[];
  /** Acknowledged operations compared with the ledger of answers, and how they came out. */
  answers: AnswerTally;
  /** Operations refused or cut off, by what they got and the cause that explains it. */
  unanswered: Record<string, number>;
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
  // the children the control steps start over HTTP are no model's either
  const httpChildren = new Map<string, ChildSpec>(
    [
      ...scenario.children,
      ...(scenario.control?.children ?? []).map((c) => ({
        ref: c.ref,
        root: c.parent,
        mode: c.mode,
        childId: c.childId,
        id: c.id,
      })),
    ]
      .filter((c) => c.id !== "") // a child whose parent was never created has no id
      .map((c) => [c.id, c]),
  );
  const opsOn = (ref: string, ...kinds: string[]): Op[] =>
    history.filter((o) => o.target === ref && kinds.includes(o.kind));
  const ev: Evidence = {
    scenario,
    history,
    fired: input.fired ?? [],
    resets: input.resets ?? [],
    ids,
    sessions,
    used: new Set(),
  };
  const unanswered: Record<string, number> = {};
  checkOperations(ev, unanswered, (id, message) => flag("wrong", id, message));

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
    checkMessageAnswers(ev, id, s, sends, answers, flag);
    for (const op of conflicts) {
      // a changed body under a key is refused once the key's first body landed; when that one was
      // refused itself (a storage failure, say), the changed body is the key's first use
      const firstLanded = (byKey.get(String(op.input?.key)) ?? []).some(
        (o) => o.outcome === "ok" && o.end <= op.start,
      );
      const stored = s.inbox.find((r) => r.idempotencyKey === op.input?.key);
      const otherBody = stored !== undefined && textOf(stored.content) !== String(op.input?.content);
      // (a refused one is explained, or not, with every refused operation: refusals.ts)
      if (op.outcome === "ok" && (firstLanded || otherBody))
        flag("duplicated", id, `a different body under key ${op.input?.key} was accepted`);
    }
  }
  for (const [id, s] of sessions) if (s.header) checkModelDelegation(id, s, get, httpChildren, flag);
  checkModelChildren(ev, answers, flag);
  checkApprovals(ev, notes, flag);
  checkControl(ev, input.control, notes, flag);

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
        const settled = endEvents.find((e) => e.data.runId === runId)?.at ?? Number.MAX_SAFE_INTEGER;
        if (run?.state === "settled" && Array.isArray(scripted) && acked.wall)
          checkRunAnswer(
            ev,
            { parentId, runId: run.runId, childId: child.id, result: run.result },
            scripted as string[],
            { start: acked.wall.start, end: settled },
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
        checkChildAnswers(ev, child.id, c, [...(acked ? [acked] : []), ...followups], answers, flag);
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

  return { violations, notes, answers, unanswered };
}
