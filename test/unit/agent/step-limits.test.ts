import { describe, expect, it } from "vitest";
import {
  claimAttempt,
  claimCompactionAttempt,
  claimToolRun,
  MAX_TOOL_RUNS,
  stepRefusal,
  withoutAttempts,
} from "../../../src/agent/step-limits";
import { INITIAL_LOOP, type LoopState } from "../../../src/core/turn-plan";

/** The limits on a turn's model steps, pure (semantics.md §2.4, §2.7, §8). */

const open = { ...INITIAL_LOOP, turns: 1, openTurn: 1, turnStartSeq: 0 };
const limits = { maxSteps: 3, attemptsPerStep: 2 };

describe("step limits", () => {
  it("refuse a step past the step budget, a spent token budget, or the step's attempts, in that order", () => {
    expect(stepRefusal(open, limits)).toBeUndefined();
    expect(stepRefusal({ ...open, step: 3 }, limits)).toEqual({ error: "step budget of 3 exhausted" });
    const budget = (
      limit: { tokens?: number; usd?: number },
      tokens: number,
      usd: number,
      shared = false,
    ) => ({
      ...limits,
      budget: { limit, used: { tokens, usd }, shared },
    });
    expect(stepRefusal(open, budget({ tokens: 10 }, 10, 0))).toEqual({
      error: "BUDGET_EXCEEDED: the session's token budget of 10 is spent (10 used)",
      code: "BUDGET_EXCEEDED",
    });
    expect(stepRefusal(open, budget({ tokens: 10 }, 9, 0))).toBeUndefined();
    // a budget in dollars, and one shared with a tree (a session below the one created with it)
    expect(stepRefusal(open, budget({ usd: 0.5 }, 1_000_000, 0.49))).toBeUndefined();
    expect(stepRefusal(open, budget({ tokens: 100, usd: 0.5 }, 10, 0.5, true))).toEqual({
      error: "BUDGET_EXCEEDED: its tree's budget of $0.5 is spent ($0.5 used)",
      code: "BUDGET_EXCEEDED",
    });
    expect(stepRefusal({ ...open, attempts: 2 }, limits)).toEqual({
      error: "the model step failed 2 times (the object restarted during each call)",
    });
    expect(stepRefusal({ ...open, attempts: 2, lastModelError: "503" }, limits)).toEqual({
      error: "the model step failed 2 times; last: 503",
    });
  });

  it("claim attempts until the step's budget is spent, keeping the last failure", () => {
    const first = claimAttempt(open, 2, undefined);
    expect(first.claim).toEqual({ ok: true, attempt: 1, remaining: 1 });
    const second = claimAttempt(first.next!, 2, "busy");
    expect(second.claim).toEqual({ ok: true, attempt: 2, remaining: 0 });
    expect(second.next).toMatchObject({ attempts: 2, lastModelError: "busy" });
    const third = claimAttempt(second.next!, 2, "still busy");
    expect(third).toEqual({
      claim: { ok: false, reason: "the model step failed 2 times; last: still busy" },
    });
    expect(withoutAttempts(second.next!)).toEqual(open);
  });

  it("claim a step's summarizing calls from a budget of their own, which leaves the step's attempts whole", () => {
    const first = claimCompactionAttempt(open, 2);
    expect(first.claim).toEqual({ ok: true, attempt: 1, remaining: 1 });
    const second = claimCompactionAttempt(first.next!, 2);
    expect(second.next).toMatchObject({ compactionAttempts: 2 });
    expect(claimCompactionAttempt(second.next!, 2).claim).toEqual({
      ok: false,
      reason: "the step's compactions made 2 summarizing calls",
    });
    expect(claimAttempt(second.next!, 2, undefined).claim).toEqual({ ok: true, attempt: 1, remaining: 1 });
    expect(stepRefusal(second.next!, limits)).toBeUndefined();
    expect(withoutAttempts(second.next!)).toEqual(open);
  });

  it("re-run a step's tool calls after restarts at most MAX_TOOL_RUNS times in all", () => {
    let loop: LoopState = { ...open, toolRuns: 1 }; // the first run, claimed with the calls
    for (let run = 2; run <= MAX_TOOL_RUNS; run++) {
      const claimed = claimToolRun(loop);
      if (!("next" in claimed)) throw new Error(`run ${run} refused`);
      expect(claimed.next.toolRuns).toBe(run);
      loop = claimed.next;
    }
    expect(claimToolRun(loop)).toEqual({
      refusal: "Error: the call was cut short by a restart of the session 3 times; it is not run again",
    });
    expect(withoutAttempts(loop)).toEqual(open);
  });
});
