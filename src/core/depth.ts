import { type Failure, fail, type Outcome, ok } from "../contract/errors";

/**
 * Delegation depth. The header's depth is the authoritative, monotone floor; a child is one
 * deeper than its parent; `maxDepth` is an absolute cap (child depth must be <= it, so 0 forbids
 * any child); the deployment's cap applies whatever a request asks for.
 */

/** `maxDepth` must be a non-negative safe integer (rejects NaN, +-Infinity, fractions, -0, strings). */
export function checkMaxDepthForm(value: unknown): Failure | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0 || Object.is(value, -0)) {
    return fail("INVALID_MAX_DEPTH", "subagent maxDepth must be a non-negative safe integer");
  }
  return undefined;
}

export function childDepth(
  parentDepth: number,
  maxDepth: number | undefined,
  deploymentCap: number,
): Outcome<number> {
  const depth = parentDepth + 1;
  if (!Number.isSafeInteger(depth))
    return fail("DEPTH_EXCEEDED", "subagent depth leaves the safe-integer range");
  const cap = Math.min(maxDepth ?? Number.POSITIVE_INFINITY, deploymentCap);
  if (depth > cap) return fail("DEPTH_EXCEEDED", `subagent depth ${depth} exceeds maxDepth ${cap}`);
  return ok(depth);
}

/** The deployment cap from `MAX_DEPTH_CAP` (default 5 when unset or unreadable). */
export function deploymentDepthCap(raw: string | undefined): number {
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : 5;
}
