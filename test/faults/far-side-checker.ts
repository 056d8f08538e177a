import { MAX_TOOL_RUNS } from "../../src/agent/step-limits";
import type { FarFault } from "./far-side-plan";
import { PATHS } from "./far-side-plan";
import {
  FAR_KINDS,
  type FarCheck,
  type FarEvent,
  type FarSnapshot,
  Ledger,
  RESTART_REFUSAL,
  stepOf,
  textOf,
  type Window,
} from "./far-side-ledger";
import type { Op } from "./harness";

/**
 * The far-side campaign's checker, a pure function of what the client side recorded (the
 * history of operations, the network faults as they fired, the resets as they took effect) and
 * what the root session holds after the drain (its events, its runs, the far sessions made for
 * its runs). The ledger:
 *
 * - every acknowledged start settles exactly once (one `subagent/start`, one `subagent/end`) with
 *   its far side's scripted answer, from exactly one far session (remote, A2A); or ends `error`
 *   because a network fault fired on that run's own paths while it ran (an ACP run also because
 *   a reset of its session took effect while it ran);
 * - every acknowledged MCP or user-tool message is answered once, its one call answered once
 *   with the server's or the tool's answer; or an MCP error a fault on the MCP path explains
 *   while that call ran, or a call cut short by as many resets as a step's tool calls may run
 *   (MAX_TOOL_RUNS), each taking effect while it ran;
 * - a call on the session's MCP face answers its child's text, its child ended once; a call cut
 *   off needs a fault on the face's path during the call;
 * - nothing is left owed.
 *
 * A fault explains an outcome only when it could have caused it: not a delay, on the path the
 * operation travels, after the operation began and before its outcome was recorded, and not on
 * a request that names another operation (a request naming none, a connection's setup, counts
 * for every operation on its path at that time). Every far operation is counted: as expected,
 * refused or cut off by a named cause, or a violation.
 */

export type { FarCheck, FarEvent, FarFigures, FarRun, FarSnapshot } from "./far-side-ledger";

/** A start through a far provider: settled once, with its far side's answer or a fault's error. */
function checkStart(op: Op, l: Ledger): void {
  const step = stepOf<"start">(op);
  const runId = String(op.result?.runId);
  const starts = l.events("subagent/start", (e) => e.data.runId === runId);
  const ends = l.events("subagent/end", (e) => e.data.runId === runId);
  if (starts.length !== 1) l.flag("duplicated", `run ${step.tag} has ${starts.length} subagent/start`);
  if (ends.length !== 1) {
    l.flag(ends.length === 0 ? "stuck" : "duplicated", `run ${step.tag} has ${ends.length} subagent/end`);
    return;
  }
  const run = l.snap.runs.find((r) => r.runId === runId);
  if (run?.state !== "settled") l.flag("stuck", `run ${step.tag} is ${run?.state}`);
  const result = run?.result
    ? (JSON.parse(run.result) as { output?: { text?: string }[]; stopReason?: string; diagnostic?: string })
    : undefined;
  const text = textOf(result?.output);
  const far = l.snap.farSessions[step.tag] ?? 0;
  const prompts = l.snap.farPrompts[step.tag] ?? 0;
  if (step.provider !== "acp" && far > 1)
    l.flag("duplicated", `run ${step.tag} made ${far} sessions on the far side`);
  if (step.provider !== "acp" && prompts > 1)
    l.flag("duplicated", `run ${step.tag}'s prompt reached the far side ${prompts} times`);
  const said = `run ${step.tag} (${step.provider}) ended ${result?.stopReason} with ${JSON.stringify(text).slice(0, 80)}`;
  if (result?.stopReason === "completed" && text === step.answer) {
    if (step.provider !== "acp" && far === 0) l.flag("wrong", `${said} but no far session took its prompt`);
    else l.answers.asExpected++;
    return;
  }
  // the run's time: from its start's request to its end's event
  const window: Window = { from: op.start, untilClock: ends[0]!.at };
  // an ACP run's connection cannot outlive its object: a reset ends its prompt (after retries)
  const reset = step.provider === "acp" ? l.resetCause(window) : undefined;
  const cause =
    result?.stopReason !== "error"
      ? undefined
      : (l.faultCause(op, PATHS[step.provider], window) ?? (reset && `reset of its session: ${reset}`));
  if (cause) l.refuse(`far run ended error: ${cause}`);
  else l.flag("wrong", `${said}: ${result?.diagnostic?.slice(0, 200)}`);
}

/**
 * A message's one turn, the one call of `tool` it made (found by `matches` on its arguments) and
 * that call's one result in the turn; `undefined` (and flagged) when any is missing or doubled.
 */
function callOf(
  l: Ledger,
  op: Op,
  finalText: string,
  tool: string,
  matches: (args: Record<string, unknown>) => boolean,
): { result: FarEvent; text: string } | undefined {
  const tag = String(op.input?.tag);
  const finals = l.events("assistant/message", (e) =>
    JSON.stringify(e.data.content).includes(`${finalText}"`),
  );
  if (finals.length !== 1) {
    const claimed = l.events("agent/inbox/claimed", (e) => e.data.messageId === op.result?.messageId);
    const category = finals.length > 1 ? "duplicated" : claimed.length > 0 ? "wrong" : "lost";
    l.flag(category, `${op.kind} ${tag} answered ${finals.length} times`);
    return undefined;
  }
  const ofTool = (c: { name: string; args: Record<string, unknown> }) => c.name === tool && matches(c.args);
  const calls = l.events("assistant/message", (e) => (e.data.toolCalls ?? []).some(ofTool));
  if (calls.length !== 1) {
    l.flag(
      calls.length > 1 ? "duplicated" : "wrong",
      `${op.kind} ${tag}: ${tool} called ${calls.length} times`,
    );
    return undefined;
  }
  const call = calls[0]!;
  const callId = (call.data.toolCalls as { id: string; name: string; args: Record<string, unknown> }[]).find(
    ofTool,
  )?.id;
  // tool call ids repeat across turns: the call's results lie between it and its turn's answer
  const results = l.events(
    "tool/result",
    (e) => e.data.toolCallId === callId && e.seq > call.seq && e.seq < finals[0]!.seq,
  );
  const texts = results.map((e) => textOf(e.data.content));
  if (results.length !== 1) {
    l.flag(
      results.length > 1 ? "duplicated" : "wrong",
      `${op.kind} ${tag}: its ${tool} call answered ${results.length} times ${JSON.stringify(texts).slice(0, 200)}`,
    );
    return undefined;
  }
  return { result: results[0]!, text: texts[0]! };
}

/** A message whose turn calls the MCP server's `shout`: its one result the server's answer. */
function checkMcp(op: Op, l: Ledger): void {
  const tag = String(op.input?.tag);
  const answered = callOf(l, op, `shouted ${tag}`, "mcp__tools__shout", (a) => a.text === `mcp ${tag}`);
  if (!answered) return;
  const { result, text } = answered;
  if (result.data.isError !== true && text === `MCP ${tag.toUpperCase()}`) {
    l.answers.asExpected++;
    return;
  }
  const window: Window = { from: op.start, untilClock: result.at };
  const resets = l.resetCause(window, MAX_TOOL_RUNS);
  const cause =
    result.data.isError !== true
      ? undefined
      : RESTART_REFUSAL.test(text)
        ? resets && `resets during the call: ${resets}`
        : l.faultCause(op, ["mcp-call"], window);
  if (cause) l.refuse(`MCP call error: ${cause}`);
  else l.flag("wrong", `MCP call of ${tag} answered ${JSON.stringify(text).slice(0, 160)}`);
}

/** What the campaign Worker's `far_tool` answers for each behaviour (test/faults/worker.ts). */
function toolAnswer(tag: string, behaviour: string, timeoutMs: number): string {
  if (behaviour === "answer") return `tool ${tag}`;
  if (behaviour === "throw") return `Error: tool failed ${tag}`;
  return `Error: far_tool timed out after ${timeoutMs} ms`;
}

/** A message whose turn calls the user tool: one call, one result, what the tool was told to do. */
function checkTool(op: Op, l: Ledger, toolTimeoutMs: number): void {
  const { tag, behaviour } = stepOf<"tool">(op);
  const answered = callOf(l, op, `tooled ${tag}`, "far_tool", (a) => a.tag === tag);
  if (!answered) return;
  const { result, text } = answered;
  if (text === toolAnswer(tag, behaviour, toolTimeoutMs)) {
    l.answers.asExpected++;
    return;
  }
  // the refusal comes after the call was cut short by a restart each time it ran
  const cause = RESTART_REFUSAL.test(text)
    ? l.resetCause({ from: op.start, untilClock: result.at }, MAX_TOOL_RUNS)
    : undefined;
  if (cause) l.refuse(`user tool cut short by resets: ${cause}`);
  else l.flag("wrong", `tool ${tag} (${behaviour}) answered ${JSON.stringify(text).slice(0, 160)}`);
}

/** A call on the session's MCP face: its child's answer, the child ended once; or cut off by a fault. */
function checkFace(op: Op, l: Ledger): void {
  const tag = String(op.input?.tag);
  const ends = l.events("subagent/end", (e) =>
    JSON.stringify(e.data.lastAssistantMessage ?? "").includes(`face ${tag}"`),
  );
  if (ends.length > 1) l.flag("duplicated", `face call ${tag}: its child ended ${ends.length} times`);
  const window: Window = { from: op.start, untilAt: op.end };
  if (op.outcome !== "ok") {
    const cause = l.faultCause(op, ["mcp-face"], window);
    if (cause) l.cutOff(`far-face cut off: ${cause}`);
    else l.flag("unexpected", `face call ${tag} failed with no fault on its path: ${op.code}`);
    return;
  }
  l.far.acknowledged++;
  const text = String(op.result?.text ?? "");
  if (op.result?.isError !== true && text === `echo: face ${tag}` && ends.length === 1) {
    l.answers.asExpected++;
    return;
  }
  const cause = op.result?.isError === true ? l.resetCause(window) : undefined;
  if (cause) l.refuse(`far-face error: reset of its session: ${cause}`);
  else
    l.flag("wrong", `face call ${tag} answered ${JSON.stringify(text).slice(0, 120)} (${ends.length} ends)`);
}

/**
 * The MCP server's side of the calls: each acknowledged message's one call reached it at most
 * once, and once more for each reset that took effect during its turn (a call cut short by a
 * restart runs again, at most MAX_TOOL_RUNS times); a fault may stop a call on the way or lose
 * its answer after it ran. Every call answered with the server's text reached it.
 */
function checkServed(history: readonly Op[], l: Ledger): void {
  let allowed = 0;
  let sent = 0;
  for (const op of history) {
    if (op.kind !== "far-mcp" || op.outcome !== "ok") continue;
    const tag = String(op.input?.tag);
    const final = l.events("assistant/message", (e) =>
      JSON.stringify(e.data.content).includes(`shouted ${tag}"`),
    );
    const window: Window = { from: op.start, ...(final.length === 1 ? { untilClock: final[0]!.at } : {}) };
    sent++;
    allowed += 1 + Math.min(l.resetsWithin(window).length, MAX_TOOL_RUNS - 1);
  }
  const served = l.snap.mcpServed;
  const answered = l
    .events("tool/result", (e) => e.data.name === "mcp__tools__shout" && e.data.isError !== true)
    .filter((e) => /^MCP F\d+-\d+$/.test(textOf(e.data.content))).length;
  if (served > allowed)
    l.flag(
      "duplicated",
      `the MCP server served ${served} calls for ${sent} messages (${allowed} allowed by resets)`,
    );
  if (served < answered)
    l.flag("wrong", `${answered} calls answered with the MCP server's text, ${served} served`);
}

export interface FarCheckOptions {
  /** The user tool's timeout (its timed-out answer names it). */
  toolTimeoutMs: number;
}

/** Compares the root (and the far sides' sessions) with the ledger of what each far operation must produce. */
export function checkFarSide(
  history: readonly Op[],
  faults: readonly FarFault[],
  snap: FarSnapshot,
  options: FarCheckOptions,
): FarCheck {
  const l = new Ledger(history, faults, snap);
  snap.log.forEach((e, i) => {
    if (e.seq !== i) l.flag("seq-gaps", `event ${e.seq} at position ${i}`);
  });
  for (const op of history) {
    if (!(FAR_KINDS as readonly string[]).includes(op.kind)) continue;
    l.far.operations++;
    l.answers.checked++;
    if (op.kind === "far-face") {
      checkFace(op, l);
      continue;
    }
    // starts and messages go to the session itself, on no faulty path: each must be taken
    if (op.outcome !== "ok") {
      l.flag("unexpected", `${op.kind} ${op.input?.tag} answered ${op.status ?? "nothing"} ${op.code ?? ""}`);
      continue;
    }
    l.far.acknowledged++;
    if (op.kind === "far-start") checkStart(op, l);
    else if (op.kind === "far-mcp") checkMcp(op, l);
    else checkTool(op, l, options.toolTimeoutMs);
  }
  checkServed(history, l);
  for (const what of snap.owed) l.flag("stuck", `${what} is still owed`);
  return { violations: l.violations, answers: l.answers, far: l.far };
}
