import { compact } from "../core/compact";
import { logQuotaMessage } from "../core/quotas";
import type { LoopState } from "../core/turn-plan";
import type { AttemptClaim } from "./model-calls";
import { budgetSpent, type BudgetState } from "./budget";

/**
 * What bounds a turn's model steps, from durable state alone (pure): the step budget of a turn,
 * the session's token budget, its log quota, and the attempts one step may make across retries
 * and restarts.
 * The turn driver asks before each model step and claims each attempt in a transaction.
 */

export interface StepLimits {
  maxSteps: number;
  attemptsPerStep: number;
  /** The session's budget and what counts against it, when it has one. */
  budget?: BudgetState | undefined;
  /** The session's log size and its quota (MAX_LOG_BYTES), when known. */
  log?: { bytes: number; max: number } | undefined;
}

/** Why the open turn may not make another model step (it ends as `error`), or undefined. */
export function stepRefusal(
  loop: LoopState,
  limits: StepLimits,
): { error: string; code?: "BUDGET_EXCEEDED" | "QUOTA_EXCEEDED" } | undefined {
  if (loop.step >= limits.maxSteps) return { error: `step budget of ${limits.maxSteps} exhausted` };
  // a spent budget ends the turn before another model call (never mid-append)
  const spent = budgetSpent(limits.budget);
  if (spent) return { error: spent, code: "BUDGET_EXCEEDED" };
  // a log at its quota takes no new work: the open turn ends before another model call, so a
  // session never grows its log without bound (what its children deliver is still applied)
  const log = limits.log;
  if (log && log.bytes >= log.max)
    return { error: `QUOTA_EXCEEDED: ${logQuotaMessage(log.bytes, log.max)}`, code: "QUOTA_EXCEEDED" };
  // a step whose attempts were spent by restarts (a crash during each call) ends here, before
  // another model call: an object that restarts in a loop never calls the model without bound
  if ((loop.attempts ?? 0) >= limits.attemptsPerStep)
    return { error: attemptsSpent(limits.attemptsPerStep, loop.lastModelError) };
  return undefined;
}

/** The next attempt of the current step and the loop state that records it, or why there is none. */
export function claimAttempt(
  loop: LoopState,
  attemptsPerStep: number,
  lastError: string | undefined,
): { claim: AttemptClaim; next?: LoopState } {
  const used = loop.attempts ?? 0;
  const last = lastError ?? loop.lastModelError;
  if (used >= attemptsPerStep) return { claim: { ok: false, reason: attemptsSpent(attemptsPerStep, last) } };
  return {
    claim: { ok: true, attempt: used + 1, remaining: attemptsPerStep - used - 1 },
    next: { ...loop, attempts: used + 1, ...compact({ lastModelError: last?.slice(0, 1000) }) },
  };
}

/** The next summarizing call of the current step's compactions, and the loop state that records it. */
export function claimCompactionAttempt(
  loop: LoopState,
  attemptsPerStep: number,
): { claim: AttemptClaim; next?: LoopState } {
  const used = loop.compactionAttempts ?? 0;
  if (used >= attemptsPerStep)
    return { claim: { ok: false, reason: `the step's compactions made ${used} summarizing calls` } };
  return {
    claim: { ok: true, attempt: used + 1, remaining: attemptsPerStep - used - 1 },
    next: { ...loop, compactionAttempts: used + 1 },
  };
}

/** The loop state of a new step (or a closed turn): its attempts and their last failure forgotten. */
export function withoutAttempts(loop: LoopState): LoopState {
  const {
    attempts: _attempts,
    lastModelError: _last,
    toolRuns: _runs,
    compactionAttempts: _compactions,
    ...rest
  } = loop;
  return rest;
}

/** A step's tool calls run at most this often: once, and again after each of two restarts. */
export const MAX_TOOL_RUNS = 3;

/**
 * The next run of a step's unanswered tool calls after a restart: claimed (`next`), or refused
 * once MAX_TOOL_RUNS runs were cut short (the calls then get `refusal` as their error result, so
 * a crash that repeats during a tool never makes unbounded tool calls).
 */
export function claimToolRun(loop: LoopState): { next: LoopState } | { refusal: string } {
  const runs = (loop.toolRuns ?? 1) + 1;
  if (runs <= MAX_TOOL_RUNS) return { next: { ...loop, toolRuns: runs } };
  return {
    refusal: `Error: the call was cut short by a restart of the session ${MAX_TOOL_RUNS} times; it is not run again`,
  };
}

function attemptsSpent(attempts: number, lastError: string | undefined): string {
  return `the model step failed ${attempts} times${lastError ? `; last: ${lastError}` : " (the object restarted during each call)"}`;
}
