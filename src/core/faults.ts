import type { Spend } from "./usage";

/**
 * Named fault points. Production code calls `faultPoint(scope, name)` at the places a crash is
 * interesting; it does nothing unless a test installed a plan for that scope (a session id). A
 * plan may throw (a crash right there) or wait (to stage a race). Each name says where it fires:
 * `before-drive` as a drive pass begins (accepted work is in the tables), `before-model` /
 * `after-model` around the model call, `before-compact` / `after-compact` around a compaction's
 * summarizing call (`after-compact` before its event is written), `before-append` / `after-append` around the step's
 * append, `before-send` / `after-send` around an outbox send (the row is committed; `after-send`
 * before it is marked delivered), `before-apply` as a delivery arrives, `in-alarm`, `in-init`
 * (a child's creation), `mid-drain` (between the children of a drain), `in-transaction` (as a
 * storage transaction is about to commit: a throw there is a storage failure, rolled back),
 * `in-registry` (as the provider registry object takes a call; its scope is `REGISTRY_FAULT_SCOPE`),
 * `in-load` (as an object's implementation loads, its `import()` in flight: src/worker/lazy-parts.ts;
 * a throw there resets the object; scoped like the object's other points),
 * `mid-delete` (a deleted session left its parent or the directory, its rows not yet erased),
 * and around a tree's budget (durable-objects/session/tree-budget.ts): `before-reserve` /
 * `after-reserve` around a model call's reservation (`after-reserve` once its answer is kept),
 * `after-settle` (the owner released it; a session below the owner has not yet forgotten it),
 * and `after-draw` at the budget's owner, a reservation or settle committed and its answer not yet
 * sent (a synchronous point, like `in-transaction`), telling its plan what the owner holds now.
 */

export type FaultPointName =
  | "before-drive"
  | "before-model"
  | "after-model"
  | "before-compact"
  | "after-compact"
  | "before-append"
  | "after-append"
  | "before-send"
  | "after-send"
  | "before-apply"
  | "in-alarm"
  | "in-init"
  | "mid-drain"
  | "in-transaction"
  | "in-registry"
  | "in-load"
  | "mid-delete"
  | "before-reserve"
  | "after-reserve"
  | "after-settle"
  | "after-draw";

/**
 * What `after-draw` tells its plan: the session that drew and the reservation the owner holds for
 * it now (none: refused or settled). For a test to observe; the runtime never reads it back.
 */
export interface FaultDetail {
  member: string;
  held?: { key: string; spend: Spend; expiresAt: number };
}

/** The scope of the registry object's fault point (it is one object per deployment). */
export const REGISTRY_FAULT_SCOPE = "registry";

export type FaultPlan = (point: FaultPointName, detail?: FaultDetail) => void | Promise<void>;

const plans = new Map<string, FaultPlan>();

export function installFaults(scope: string, plan: FaultPlan): () => void {
  plans.set(scope, plan);
  return () => {
    if (plans.get(scope) === plan) plans.delete(scope);
  };
}

/** Whether any plan is installed (hot paths skip even naming their scope otherwise). */
export function faultsArmed(): boolean {
  return plans.size > 0;
}

export function faultPoint(scope: string, point: FaultPointName, detail?: FaultDetail): void | Promise<void> {
  const plan = plans.get(scope);
  return plan ? plan(point, detail) : undefined;
}
