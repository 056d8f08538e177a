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
    expect(stepRefusal(open, { ...limits, tokens: { tokens: 10, used: 10 } })).toEqual({
      error: "BUDGET_EXCEEDED: the session's token budget of 10 is spent (10 used)",
      code: "BUDGET_EXCEEDED",
    });
    expect(stepRefusal(open, { ...limits, tokens: { tokens: 10, used: 9 } })).toBeUndefined();
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
