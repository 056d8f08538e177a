import { describe, expect, it } from "vitest";
import { stepRefusal } from "../../../src/agent/step-limits";
import { INITIAL_LOOP } from "../../../src/core/turn-plan";

/** The log quota among a turn's step limits (src/agent/step-limits.ts, MAX_LOG_BYTES), pure. */

const open = { ...INITIAL_LOOP, turns: 1, openTurn: 1, turnStartSeq: 0 };
const limits = { maxSteps: 3, attemptsPerStep: 2 };

describe("a turn's next step and its session's log quota", () => {
  it("runs while the log is one byte under its quota, and ends the turn as error naming the quota at it", () => {
    expect(stepRefusal(open, { ...limits, log: { bytes: 99, max: 100 } })).toBeUndefined();
    expect(stepRefusal(open, { ...limits, log: { bytes: 100, max: 100 } })).toEqual({
      error:
        "QUOTA_EXCEEDED: this session's log holds 100 bytes, at or past its quota of 100 (MAX_LOG_BYTES); it takes no new work",
      code: "QUOTA_EXCEEDED",
    });
    expect(stepRefusal(open, { ...limits, log: { bytes: 250, max: 100 } })?.error).toMatch(
      /^QUOTA_EXCEEDED: /,
    );
    // the step budget is still the first reason given
    expect(stepRefusal({ ...open, step: 3 }, { ...limits, log: { bytes: 100, max: 100 } })).toEqual({
      error: "step budget of 3 exhausted",
    });
  });
});
