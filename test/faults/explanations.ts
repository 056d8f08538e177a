import type { Fired, Op, Reset } from "./harness";
import { ABORT_REASON, REGISTRY_REF, type Scenario } from "./scenario";
import type { LogEvent, Snapshot } from "./snapshot";

/**
 * Why an outcome other than the scripted one may have happened, each reason tied to its cause in
 * the history. A cause counts only where and when it could have acted:
 *
 *   an injected fault  a rule of that session's scope (or the registry's) that fired inside the
 *                      outcome's span, whose injected error's text is the one the outcome carries;
 *                      each firing explains one outcome
 *   a spent budget     "the model step failed N times": at least N faults and resets of that
 *                      session inside the turn, one per attempt cut short
 *   a stop             an interrupt, dispose or drain acknowledged (a drain also when cut off, as
 *                      it is finished by the next instance) after the work was accepted and
 *                      before it ended; an ancestor's `interrupt_agent` call in that span; the end
 *                      of the parent turn that waited on a foreground run
 *
 * Spans are on the sessions' own clock (`Date.now()`, the logs' `at`), both ends included: the
 * clock moves only between I/O, so what happened in one tick shares its time.
 */

export interface Evidence {
  scenario: Scenario;
  history: readonly Op[];
  fired: readonly Fired[];
  resets: readonly Reset[];
  /** Reference -> session id. */
  ids: ReadonlyMap<string, string>;
  sessions: ReadonlyMap<string, Snapshot>;
  /** Firings that already explained an outcome: one firing explains one outcome. */
  used: Set<Fired>;
}

export interface Span {
  start: number;
  end: number;
}

/** Where the harness's own resets are recorded as faults: they are counted from the history. */
const HARNESS_POINTS = new Set(["between-ops", "mid-flight"]);

/** Rule kinds that only postpone work: they cut no attempt short and fail no request. */
const POSTPONING = new Set(["delay", "lost-alarm"]);

export function within(at: number | undefined, span: Span): boolean {
  return at !== undefined && at >= span.start && at <= span.end;
}

function overlaps(op: Op, span: Span): boolean {
  return op.wall !== undefined && op.wall.start <= span.end && op.wall.end >= span.start;
}

export function refOf(ev: Evidence, id: string): string {
  for (const [ref, value] of ev.ids) if (value === id) return ref;
  return id;
}

/** The text of the error a rule's firing throws (harness.ts, `injected`). */
export function injectedText(fired: Fired, seed: number): string {
  return `injected ${fired.kind} at ${fired.point} (fault campaign seed ${seed})`;
}

/** What an outcome needs of a firing: its session, when it ran, and the error it ended with. */
interface Want {
  scope: string;
  span: Span;
  error: string;
}

/** Per evidence: which outcome each used firing explains (so a later outcome can have it moved). */
const explained = new WeakMap<Evidence, Map<Fired, Want>>();

/**
 * A firing in `scope` (or the registry's) inside `span` whose injected error's text `error`
 * carries; it is used up: one firing explains one outcome. Firings are matched to outcomes as a
 * whole, not first come first served: when every firing that could explain this outcome already
 * explains another, that one moves to another firing it fits if there is one (an augmenting
 * path), so two turns that ended in the same millisecond as two firings are both explained in
 * either order. Of several free ones, the latest: the nearest to the outcome it explains.
 */
export function injectedFault(ev: Evidence, scope: string, span: Span, error: string): string | undefined {
  const cause = claimFiring(ev, { scope, span, error }, new Set());
  return cause && `${cause.kind} injected at ${cause.point}`;
}

function claimFiring(ev: Evidence, want: Want, visited: Set<Fired>): Fired | undefined {
  const holders = explained.get(ev) ?? new Map<Fired, Want>();
  explained.set(ev, holders);
  const fits = ev.fired
    .filter(
      (f) =>
        (f.scope === want.scope || f.scope === REGISTRY_REF) &&
        within(f.at, want.span) &&
        want.error.includes(injectedText(f, ev.scenario.seed)),
    )
    .sort((a, b) => Number(ev.used.has(a)) - Number(ev.used.has(b)) || (b.at ?? 0) - (a.at ?? 0));
  for (const firing of fits) {
    if (visited.has(firing)) continue;
    visited.add(firing);
    const holder = ev.used.has(firing) ? holders.get(firing) : undefined;
    // used by something this checker cannot move (not an outcome of this function): stays there
    if (ev.used.has(firing) && !holder) continue;
    if (holder && !claimFiring(ev, holder, visited)) continue;
    ev.used.add(firing);
    holders.set(firing, want);
    return firing;
  }
  return undefined;
}

/**
 * An error that is a reset's own (`ctx.abort()`'s reason, which calls in flight to the instance
 * fail with), of `scope` or the registry, while a reset of it overlapped `span`.
 */
export function cutByReset(ev: Evidence, scope: string, span: Span, error: string): string | undefined {
  if (!error.includes(ABORT_REASON)) return undefined;
  const reset = [scope, REGISTRY_REF].find((s) => resetsOf(ev, s, span) > 0);
  return reset === undefined
    ? undefined
    : `a reset of ${reset === REGISTRY_REF ? "the registry" : "it"} during it`;
}

/** Resets of `scope` made by the schedule (evictions, aborts, storms) that overlap `span`, counted. */
export function resetsOf(ev: Evidence, scope: string, span: Span): number {
  let n = 0;
  for (const op of ev.history) {
    if (!overlaps(op, span)) continue;
    const targets = op.target.split("+");
    if (!targets.includes(scope)) continue;
    // a busy instance's eviction goes on in the background: it may still land
    if (op.kind === "evict" && (op.outcome === "ok" || op.result?.outcome === "busy")) n++;
    else if (op.kind === "abort" && op.outcome === "ok") n++;
    else if (op.kind === "storm") n += Math.ceil(Number(op.result?.resets ?? 0) / targets.length);
  }
  return n + ev.resets.filter((r) => r.scope === scope && r.start <= span.end && r.end >= span.start).length;
}

/**
 * "The model step failed N times": every attempt was cut short, so the session's own faults and
 * resets inside the turn number at least N (a firing that resets the instance is one cause: the
 * reaper's reset after it is not counted again).
 */
export function spentBudget(ev: Evidence, scope: string, span: Span, error: string): string | undefined {
  const spent = /the model step failed (\d+) times/.exec(error);
  if (!spent) return undefined;
  const firings = ev.fired.filter(
    (f) => f.scope === scope && !POSTPONING.has(f.kind) && !HARNESS_POINTS.has(f.point) && within(f.at, span),
  ).length;
  const scheduled = resetsOf({ ...ev, resets: [] }, scope, span);
  if (firings + scheduled < Number(spent[1])) return undefined;
  return "faults or resets there during every attempt of a step";
}

/** The ancestors of a session, nearest first. */
function ancestorsOf(ev: Evidence, id: string): string[] {
  const out: string[] = [];
  let at = ev.sessions.get(id)?.header?.parentSession ?? null;
  while (at && !out.includes(at)) {
    out.push(at);
    at = ev.sessions.get(at)?.header?.parentSession ?? null;
  }
  return out;
}

/**
 * The drains (acknowledged, or cut off: a drain cut short is finished by the next instance) whose
 * subtree holds session `id`: their session is an ancestor, and the child below it on the way is
 * one of its continuable children they drain (all of them, or those named).
 */
export function drainsCovering(ev: Evidence, id: string): Op[] {
  const line = [id, ...ancestorsOf(ev, id)];
  return ev.history.filter((op) => {
    if (op.kind !== "drain" || op.outcome === "fail") return false;
    const root = ev.ids.get(op.target);
    const at = root === undefined ? -1 : line.indexOf(root);
    if (at < 1) return false;
    const child = line[at - 1]!;
    const row = ev.sessions.get(root!)?.children.find((c) => c.childId === child);
    if (row?.mode !== "continuable") return false;
    const named = op.input?.childIds as string[] | undefined;
    return named === undefined || named.includes(child);
  });
}

/** A drain covering session `id` that acted inside `span` (a cut-off one from its start on). */
export function drainedIn(ev: Evidence, id: string, span: Span): Op | undefined {
  return drainsCovering(ev, id).find(
    (op) =>
      op.wall !== undefined &&
      op.wall.start <= span.end &&
      (op.outcome === "ambiguous" || op.wall.end >= span.start),
  );
}

/** A run of a parent: what names a one-shot child that may never have been created. */
export interface RunRef {
  parentId: string;
  runId: string;
}

/** What stopped work of session `id` accepted at `span.start` before it ended at `span.end`. */
export function stoppedBy(ev: Evidence, id: string, span: Span, run?: RunRef): string | undefined {
  const ref = refOf(ev, id);
  const direct = ev.history.find(
    (op) =>
      op.target === ref &&
      op.outcome === "ok" &&
      (op.kind === "interrupt" || op.kind === "interrupt-child" || op.kind === "dispose") &&
      overlaps(op, span),
  );
  if (direct) return `an acknowledged ${direct.kind}`;
  const drain = drainedIn(ev, id, span);
  if (drain) return drain.outcome === "ok" ? "an acknowledged drain" : "a drain cut off before its answer";
  if (interruptedByAncestorModel(ev, id, span)) return "an ancestor's interrupt_agent call";
  if (foregroundTurnEnded(ev, id, span, run)) return "the end of the parent turn that waited on it";
  return undefined;
}

function interruptedByAncestorModel(ev: Evidence, id: string, span: Span): boolean {
  for (const ancestor of ancestorsOf(ev, id)) {
    const events = ev.sessions.get(ancestor)?.events ?? [];
    for (const [i, message] of events.entries()) {
      if (message.type !== "assistant/message") continue;
      const calls = (message.data.toolCalls ?? []) as {
        id: string;
        name: string;
        args?: { agent_id?: string };
      }[];
      for (const call of calls.filter((c) => c.name === "interrupt_agent" && c.args?.agent_id === id)) {
        // the call acted after its model answered and before its result was appended
        const result = resultOf(events, i, call.id);
        if (message.at <= span.end && (result === undefined || result.at >= span.start)) return true;
      }
    }
  }
  return false;
}

/**
 * The result of tool call `callId` of the assistant message at `index`: in the same turn (tool
 * call ids repeat from turn to turn).
 */
export function resultOf(events: readonly LogEvent[], index: number, callId: string): LogEvent | undefined {
  for (let i = index + 1; i < events.length; i++) {
    const e = events[i]!;
    if (e.type === "turn/end" || e.type === "turn/start") return undefined;
    if (e.type === "tool/result" && e.data.toolCallId === callId) return e;
  }
  return undefined;
}

/** A one-shot child whose parent's turn, waiting on it in the foreground, ended before it did. */
function foregroundTurnEnded(ev: Evidence, id: string, span: Span, of?: RunRef): boolean {
  const child = ev.sessions.get(id);
  const parentId = of?.parentId ?? child?.header?.parentSession;
  const runId = of?.runId ?? child?.header?.oneShot?.runId;
  if (!parentId || !runId) return false;
  const parent = ev.sessions.get(parentId);
  const run = parent?.runs.find((r) => r.runId === runId);
  // a foreground run's call key is `<turn>:<tool call id>`
  const call = run?.taskId === null ? /^(\d+):/.exec(run.callKey ?? "") : null;
  if (!parent || !call) return false;
  const end = parent.events.find((e) => e.type === "turn/end" && e.data.turn === Number(call[1]));
  return end !== undefined && end.at <= span.end;
}

/** Why a turn or run ended `reason` with `error` instead of its scripted answer, or undefined. */
export function explainEnd(
  ev: Evidence,
  id: string,
  reason: string,
  error: string,
  span: Span,
  run?: RunRef,
): string | undefined {
  const scope = refOf(ev, id);
  if (reason === "aborted") {
    const by = stoppedBy(ev, id, span, run);
    return by === undefined ? undefined : `stopped by ${by}`;
  }
  if (reason !== "error") return undefined;
  return (
    injectedFault(ev, scope, span, error) ??
    cutByReset(ev, scope, span, error) ??
    spentBudget(ev, scope, span, error)
  );
}

/** The time of a session's first event of `type` whose data matches. */
export function timeOf(
  events: readonly LogEvent[],
  type: string,
  match: (data: Record<string, unknown>) => boolean,
): number | undefined {
  return events.find((e) => e.type === type && match(e.data))?.at;
}
