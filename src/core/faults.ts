/**
 * Named fault points. Production code calls `faultPoint(scope, name)` at the places a crash is
 * interesting; it does nothing unless a test installed a plan for that scope (a session id). A
 * plan may throw (a crash right there) or wait (to stage a race).
 */

export type FaultPointName =
  | "after-accept"
  | "before-model"
  | "after-model"
  | "before-append"
  | "after-append"
  | "after-outbox-write"
  | "after-send"
  | "before-apply"
  | "in-alarm"
  | "in-init"
  | "mid-drain";

export type FaultPlan = (point: FaultPointName) => void | Promise<void>;

const plans = new Map<string, FaultPlan>();

export function installFaults(scope: string, plan: FaultPlan): () => void {
  plans.set(scope, plan);
  return () => {
    if (plans.get(scope) === plan) plans.delete(scope);
  };
}

export function faultPoint(scope: string, point: FaultPointName): void | Promise<void> {
  const plan = plans.get(scope);
  return plan ? plan(point) : undefined;
}
