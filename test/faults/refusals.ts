import { alreadyDecided } from "./approvals";
import { controlRefusal } from "./control";
import { drainsCovering, type Evidence, refOf, resetsOf } from "./explanations";
import type { Op } from "./harness";
import { REGISTRY_REF } from "./scenario";

/**
 * Operations the sessions refused (4xx) or answered without an answer (5xx, or none in time):
 * each must be explained by its cause in the history, or it is `wrong`. A cause is
 *
 *   a documented refusal  the answer the contract gives that operation in the state the history
 *                         put the session in (a changed body under a key whose first body may have
 *                         landed: 422; a continuable start or follow-up while a drain closes
 *                         admission: 409 DRAINING)
 *   a fault at it         a rule that fired, or a reset the schedule or the reaper made, inside the
 *                         operation's span in a session the operation reaches
 *
 * Counted by reason: "<refused|cut off> <status> <code>: <cause>".
 */

export type OperationFlag = (id: string, message: string) => void;

/**
 * Resets of the harness itself: not requests to the sessions (an eviction "fails" when the
 * instance was not running, a storm when it reset nothing).
 */
const RESET_KINDS = new Set(["evict", "abort", "storm"]);

export function checkOperations(ev: Evidence, counts: Record<string, number>, flag: OperationFlag): void {
  for (const op of ev.history) {
    if (op.outcome === "ok" || RESET_KINDS.has(op.kind)) continue;
    if (op.kind === "alarm") {
      // an alarm handler the harness ran once more threw (or hung): a fault there, or a reset
      const cause = faultAt(ev, op);
      const what = `alarm handler ${String(op.result?.outcome ?? "failed")}`;
      if (cause) counts[`${what}: ${cause}`] = (counts[`${what}: ${cause}`] ?? 0) + 1;
      else
        flag(
          ev.ids.get(op.target) ?? op.target,
          `alarm #${op.id}: the handler ${what}, and nothing caused it`,
        );
      continue;
    }
    const answered = op.status !== undefined ? `${op.status}${op.code ? ` ${op.code}` : ""}` : "no answer";
    const what = `${op.outcome === "fail" ? "refused" : "cut off"} ${answered}`;
    const cause = (op.outcome === "fail" ? documentedRefusal(ev, op) : undefined) ?? faultAt(ev, op);
    if (cause) counts[`${what}: ${cause}`] = (counts[`${what}: ${cause}`] ?? 0) + 1;
    else flag(ev.ids.get(op.target) ?? op.target, `${op.kind} #${op.id} ${what}, and nothing caused it`);
  }
}

/** The contract's answer to this operation in the state the history put its session in. */
function documentedRefusal(ev: Evidence, op: Op): string | undefined {
  const control = controlRefusal(ev, op);
  if (control) return control;
  if (op.kind === "conflict" && op.status === 422 && op.code === "IDEMPOTENCY_KEY_REUSED") {
    const first = ev.history.find(
      (o) =>
        o !== op &&
        o.kind !== "conflict" &&
        o.input?.key === op.input?.key &&
        o.outcome !== "fail" &&
        o.wall !== undefined &&
        op.wall !== undefined &&
        o.wall.start <= op.wall.end,
    );
    return first ? "the key's first body may have landed before" : undefined;
  }
  // a follow-up to, or a selected drain of, a child no start of which was acknowledged before: an
  // unknown child (a start cut off may have landed, or been abandoned and forgotten)
  if (op.kind === "followup" && op.status === 422 && op.code === "NOT_RESUMABLE")
    return unstarted(ev, op.target, op) ? "its child's start was never acknowledged" : undefined;
  if (op.kind === "drain" && op.status === 403 && op.code === "UNAUTHORIZED") {
    const named = (op.input?.childIds ?? []) as string[];
    const refs = named.map((id) => ev.scenario.children.find((c) => c.id === id)?.ref ?? id);
    return refs.some((ref) => unstarted(ev, ref, op)) ? "a child it names was never acknowledged" : undefined;
  }
  const decided = alreadyDecided(ev, op);
  if (decided) return decided;
  if (op.status === 409 && op.code === "DRAINING") {
    if (op.kind === "start-continuable") {
      // a whole-subtree drain closes admission at the parent; a selected one only at its children
      const root = ev.scenario.children.find((c) => c.ref === op.target)?.root;
      const drain = ev.history.find(
        (o) => o.kind === "drain" && o.target === root && o.input?.childIds === undefined && inFlight(o, op),
      );
      return drain ? "a drain of its parent closed admission" : undefined;
    }
    if (op.kind === "followup") {
      const id = ev.ids.get(op.target);
      const drain = id === undefined ? undefined : drainsCovering(ev, id).find((o) => inFlight(o, op));
      return drain ? "a drain of the child closed admission" : undefined;
    }
  }
  return undefined;
}

/** No start of child `ref` was acknowledged before `op` was sent. */
function unstarted(ev: Evidence, ref: string, op: Op): boolean {
  return !ev.history.some(
    (o) =>
      o.target === ref &&
      (o.kind === "start-one-shot" || o.kind === "start-continuable") &&
      o.outcome === "ok" &&
      o.wall !== undefined &&
      op.wall !== undefined &&
      o.wall.end <= op.wall.start,
  );
}

/** A drain acting while `op` was in flight (a cut-off one is finished later by the next instance). */
function inFlight(drain: Op, op: Op): boolean {
  if (!drain.wall || !op.wall || drain.outcome === "fail") return false;
  return (
    drain.wall.start <= op.wall.end && (drain.outcome === "ambiguous" || drain.wall.end >= op.wall.start)
  );
}

/** A fault fired, or a reset made, inside the operation's span in a session it reaches. */
function faultAt(ev: Evidence, op: Op): string | undefined {
  const span = op.wall;
  if (!span) return undefined;
  const scopes = reachedBy(ev, op);
  const fired = ev.fired.find(
    (f) =>
      f.at !== undefined &&
      f.at >= span.start &&
      f.at <= span.end &&
      f.kind !== "delay" &&
      f.kind !== "lost-alarm" &&
      f.scope.split("+").some((s) => scopes.has(s)),
  );
  if (fired) return `${fired.kind} at ${fired.point}`;
  for (const scope of scopes) if (resetsOf(ev, scope, span) > 0) return "a reset of a session it reaches";
  return undefined;
}

/** Operations the registry answers part of: a creation (the directory), a start (its provider). */
const REGISTRY_KINDS = new Set(["create", "start-one-shot", "start-continuable"]);

/**
 * The sessions an operation reaches while it is answered: its target, the target's parent for a
 * child's operation, the registry for a creation or a start, and for a drain its subtree.
 */
function reachedBy(ev: Evidence, op: Op): Set<string> {
  const scopes = new Set([op.target]);
  if (REGISTRY_KINDS.has(op.kind)) scopes.add(REGISTRY_REF);
  // what an operation says it reaches besides (a control start: its parent, the registry)
  for (const scope of (op.input?.reaches ?? []) as string[]) scopes.add(scope);
  const child = ev.scenario.children.find((c) => c.ref === op.target);
  if (child) scopes.add(child.root);
  if (op.kind === "drain") {
    const root = ev.ids.get(op.target);
    for (const [id, s] of ev.sessions) {
      let parent = s.header?.parentSession ?? null;
      for (let depth = 0; parent && depth < 8; depth++) {
        if (parent === root) scopes.add(refOf(ev, id));
        parent = ev.sessions.get(parent)?.header?.parentSession ?? null;
      }
    }
  }
  return scopes;
}
