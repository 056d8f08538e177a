import { type AnswerTally, checkAnswered, checkRunAnswer, type Flag, refuse, textOf } from "./answers";
import { cutByReset, type Evidence, injectedFault, refOf, type Span, timeOf } from "./explanations";
import type { ModelChild } from "./scenario";
import type { LogEvent, RunRowDump, Snapshot } from "./snapshot";

/**
 * The children scripted models start, in the ledger: every operation records the children its
 * message's or prompt's script starts (`op.input.children`, by the `description` of the
 * `subagent` call, which carries the tag), with the answer each must give. After the drain:
 *
 *   foreground             the run's result is the child's scripted answer (or explained), and the
 *                          parent's tool result is that run's result
 *   background one-shot    the task's run settled with the child's scripted answer (or explained)
 *   background continuable the child's first turn says its scripted answer once (or is explained)
 *
 * A start the parent's tool refused (an error tool result, no child) needs its injected cause.
 */

interface SubagentCall {
  id: string;
  name: string;
  args: { description?: string };
}

/** Every child the ledger knows, by the description of the call that starts it. */
function ledgerOf(ev: Evidence): Map<string, ModelChild> {
  const out = new Map<string, ModelChild>();
  const add = (children: readonly ModelChild[]): void => {
    for (const child of children) {
      out.set(child.description, child);
      add(child.children);
    }
  };
  for (const op of ev.history) if (Array.isArray(op.input?.children)) add(op.input.children as ModelChild[]);
  return out;
}

export function checkModelChildren(ev: Evidence, tally: AnswerTally, flag: Flag): void {
  const ledger = ledgerOf(ev);
  for (const [id, s] of ev.sessions) {
    if (!s.header) continue;
    for (const [i, message] of s.events.entries()) {
      if (message.type !== "assistant/message") continue;
      for (const call of (message.data.toolCalls ?? []) as SubagentCall[]) {
        const child = call.name === "subagent" ? ledger.get(String(call.args.description)) : undefined;
        if (child) checkStarted(ev, id, s, turnAt(s.events, i), call, child, tally, flag);
      }
    }
  }
}

/** The turn holding the event at `index`: its number, when it started, and its events from there on. */
interface TurnOf {
  turn: number;
  start: number;
  /** The turn's events after the call's message, up to its end (tool call ids repeat across turns). */
  rest: LogEvent[];
}

function turnAt(events: readonly LogEvent[], index: number): TurnOf {
  let first = index;
  while (first > 0 && events[first]!.type !== "turn/start") first--;
  let last = index;
  while (last < events.length - 1 && events[last]!.type !== "turn/end") last++;
  const start = events[first]!;
  return { turn: Number(start.data.turn), start: start.at, rest: events.slice(index + 1, last + 1) };
}

function checkStarted(
  ev: Evidence,
  id: string,
  s: Snapshot,
  turn: TurnOf,
  call: SubagentCall,
  child: ModelChild,
  tally: AnswerTally,
  flag: Flag,
): void {
  const result = turn.rest.find((e) => e.type === "tool/result" && e.data.toolCallId === call.id);
  const said = result ? textOf(result.data.content) : undefined;
  const answers = child.answer === undefined ? [] : [child.answer];
  // a foreground run's call key is `<turn>:<tool call id>`
  const run = child.background
    ? s.runs.find((r) => r.taskId !== null && said === `started background subagent task ${r.taskId}`)
    : s.runs.find((r) => r.taskId === null && r.callKey === `${turn.turn}:${call.id}`);
  if (run) {
    if (run.state !== "settled") return; // `stuck` already
    checkRunAnswer(ev, { parentId: id, ...run }, answers, runSpan(s, run), tally, flag);
    if (!child.background && said !== undefined) checkForegroundResult(id, call, run, said, flag);
    return;
  }
  const continuable = /^started subagent ([0-9a-f-]{36})$/.exec(said ?? "");
  const started = continuable ? ev.sessions.get(continuable[1]!) : undefined;
  if (child.background && started) {
    checkContinuable(ev, continuable![1]!, started, child, tally, flag);
    return;
  }
  // no run and no child: the turn ended before the call answered (the parent's own ledger says
  // why), or the tool refused the start, which needs its injected cause
  if (result === undefined || said === undefined) return;
  tally.checked++;
  const span = { start: turn.start, end: result.at };
  const why = injectedFault(ev, refOf(ev, id), span, said) ?? cutByReset(ev, refOf(ev, id), span, said);
  if (why) refuse(tally, `start refused: ${why}`);
  else flag("wrong", id, `subagent call ${child.description} answered ${JSON.stringify(said.slice(0, 120))}`);
}

/**
 * A continuable child a model started: its first message says the child's scripted answer, and
 * each follow-up acknowledged to it (the campaign's wake-ups of parked children) its own.
 */
function checkContinuable(
  ev: Evidence,
  childId: string,
  started: Snapshot,
  child: ModelChild,
  tally: AnswerTally,
  flag: Flag,
): void {
  const first = [...started.inbox].sort((a, b) => a.position - b.position)[0];
  if (!first) return;
  const expected = new Map<string, string[]>([
    [first.messageId, child.answer === undefined ? [] : [child.answer]],
  ]);
  const ref = refOf(ev, childId);
  for (const op of ev.history)
    if (
      op.kind === "followup" &&
      op.target === ref &&
      op.outcome === "ok" &&
      Array.isArray(op.input?.answers)
    )
      expected.set(String(op.result?.messageId), op.input.answers as string[]);
  const acknowledged = [...expected.keys()].flatMap((messageId) => {
    const row = started.inbox.find((r) => r.messageId === messageId);
    if (!row) flag("lost", childId, `acknowledged follow-up ${messageId} absent`);
    return row ? [{ key: messageId === first.messageId ? child.description : messageId, row }] : [];
  });
  checkAnswered(ev, childId, started, acknowledged, (messageId) => expected.get(messageId), tally, flag);
}

/** The run's span in its parent's log: from its `subagent/start` to its `subagent/end`. */
function runSpan(s: Snapshot, run: RunRowDump): Span {
  const start = timeOf(s.events, "subagent/start", (d) => d.runId === run.runId) ?? 0;
  const end = timeOf(s.events, "subagent/end", (d) => d.runId === run.runId) ?? Number.MAX_SAFE_INTEGER;
  return { start, end };
}

/** A foreground call's tool result is its own run's result: the text, or an error when it failed. */
function checkForegroundResult(
  id: string,
  call: SubagentCall,
  run: RunRowDump,
  said: string,
  flag: Flag,
): void {
  const result = run.result as { output?: unknown; stopReason?: string } | null;
  if (!result) return;
  const fits = result.stopReason === "completed" ? said === textOf(result.output) : said.startsWith("Error:");
  if (!fits)
    flag(
      "wrong",
      id,
      `foreground call ${call.args.description} answered ${JSON.stringify(said.slice(0, 120))}, its run ${result.stopReason} ${JSON.stringify(textOf(result.output).slice(0, 80))}`,
    );
}
