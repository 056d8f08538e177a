import { describe, expect, test } from "vitest";
import { type BudgetEvent, type BudgetWorld, checkBudget, loggedCalls } from "./budget-checker";

/**
 * The budget campaign's checker is not vacuous: each broken outcome planted in a world that
 * otherwise holds is named (overspend past the misses, a call without a reservation, a usage
 * counted twice or not at all, a reservation or a held key left behind, a budget refusal
 * without its code, a start refused for another cause), and the world as it should be passes.
 */

let seq = 0;
const ev = (type: string, data: Record<string, unknown> = {}): BudgetEvent => ({ seq: seq++, type, data });
const step = (inputTokens: number, outputTokens: number, costUsd?: number) =>
  ev("assistant/message", {
    content: [],
    usage: { inputTokens, outputTokens, ...(costUsd === undefined ? {} : { costUsd }) },
  });

/** An owner with one turn of two steps (the second refused), a child with one step: on 3,000 tokens. */
function world(): BudgetWorld {
  const owner = [
    ev("turn/start", { turn: 1 }),
    step(900, 100),
    ev("turn/end", {
      turn: 1,
      reason: "error",
      code: "BUDGET_EXCEEDED",
      error: "BUDGET_EXCEEDED: the session's token budget of 3000 cannot cover this model call",
    }),
  ];
  const child = [
    ev("turn/start", { turn: 1 }),
    step(1_100, 50),
    ev("turn/end", { turn: 1, reason: "completed" }),
  ];
  return {
    limit: { tokens: 3000 },
    ownerId: "o",
    members: [
      { id: "o", name: "owner", log: owner },
      { id: "c", name: "c0", log: child, drawn: { tokens: 1_150, usd: 0 } },
    ],
    granted: [
      { member: "o", key: "1.0", worst: { tokens: 1_100, usd: 0 } },
      // the child's estimate missed by 50 tokens
      { member: "c", key: "1.0", worst: { tokens: 1_100, usd: 0 } },
      // asked again (a re-run after a crash): the first grant is the one held
      { member: "c", key: "1.0", worst: { tokens: 900, usd: 0 } },
    ],
    rowsLeft: [],
    ownerFigure: { tokens: 2_150, usd: 0 },
    starts: [{ status: 201 }, { status: 202 }, { status: 422, code: "BUDGET_EXCEEDED" }],
  };
}

describe("the budget campaign's checker", () => {
  test("a world that holds passes; the margin is what the estimates missed", () => {
    expect(checkBudget(world())).toEqual({
      violations: [],
      spent: { tokens: 2_150, usd: 0 },
      margin: { tokens: 50, usd: 0 },
    });
  });

  test("the keys of a log's calls: steps by turn and position, compactions by the step they precede", () => {
    const log = [
      ev("context/compacted", { usage: { inputTokens: 5, outputTokens: 1 } }),
      ev("turn/start", { turn: 2 }),
      step(1, 1),
      ev("context/compacted", { usage: { inputTokens: 2, outputTokens: 1 } }),
      step(1, 1),
      ev("turn/end", { turn: 2, reason: "completed" }),
      ev("context/compacted", { usage: { inputTokens: 3, outputTokens: 1 } }),
    ];
    expect(loggedCalls(log).map((c) => c.key)).toEqual([
      "idle.0/compaction",
      "2.0",
      "2.1/compaction",
      "2.1",
      "idle.2/compaction",
    ]);
  });

  test("spending past the budget plus the misses is overspend", () => {
    const w = world();
    const child = w.members[1]!;
    const more = [...child.log.slice(0, 2), step(1_000, 100), child.log[2]!];
    w.members = [w.members[0]!, { ...child, log: more, drawn: { tokens: 2_250, usd: 0 } }];
    w.granted = [...w.granted, { member: "c", key: "1.1", worst: { tokens: 1_100, usd: 0 } }];
    w.ownerFigure = { tokens: 3_250, usd: 0 };
    expect(checkBudget(w).violations).toEqual([
      "the tree spent 3250 tokens: over its budget of 3000 plus the estimates' misses (50)",
    ]);
  });

  test("dollars are checked apart", () => {
    const w = world();
    w.limit = { usd: 1 };
    w.members = [
      {
        id: "o",
        name: "owner",
        log: [
          ev("turn/start", { turn: 1 }),
          step(1, 400, 0.801),
          ev("turn/end", { turn: 1, reason: "completed" }),
        ],
      },
    ];
    w.granted = [{ member: "o", key: "1.0", worst: { tokens: 500, usd: 0.9 } }];
    w.ownerFigure = { tokens: 401, usd: 0.801 };
    expect(checkBudget(w).violations).toEqual([]);
    w.members = [{ ...w.members[0]!, log: [...w.members[0]!.log.slice(0, 2), step(1, 200, 0.401)] }];
    w.granted = [...w.granted, { member: "o", key: "1.1", worst: { tokens: 300, usd: 0.5 } }];
    w.ownerFigure = { tokens: 602, usd: 1.202 };
    expect(checkBudget(w).violations).toEqual([
      "the tree spent $1.202: over its budget of $1 plus the estimates' misses ($0)",
    ]);
  });

  test("a call that ran without a reservation is named", () => {
    const w = world();
    w.granted = w.granted.filter((g) => g.member !== "c");
    expect(checkBudget(w).violations).toEqual(["c0: model call 1.0 ran without a reservation"]);
  });

  test("a usage the owner counts twice, or not at all, is named", () => {
    const twice = world();
    twice.members = [twice.members[0]!, { ...twice.members[1]!, drawn: { tokens: 2_300, usd: 0 } }];
    twice.ownerFigure = { tokens: 3_300, usd: 0 };
    expect(checkBudget(twice).violations).toEqual([
      "c0: the owner counts 2300 tokens ($0) for it, its log 1150 ($0)",
      "the owner's figure is 3300 tokens ($0), the logs' 2150 ($0)",
    ]);
    const never = world();
    const { drawn: _, ...child } = never.members[1]!;
    never.members = [never.members[0]!, child];
    never.ownerFigure = { tokens: 1_000, usd: 0 };
    expect(checkBudget(never).violations).toEqual([
      "c0: the owner counts 0 tokens ($0) for it, its log 1150 ($0)",
      "the owner's figure is 1000 tokens ($0), the logs' 2150 ($0)",
    ]);
  });

  test("a reservation left at the owner, or a key a session still holds, is named", () => {
    const w = world();
    w.rowsLeft = [{ member: "c", key: "1.0" }];
    w.members = [w.members[0]!, { ...w.members[1]!, held: "1.0" }];
    expect(checkBudget(w).violations).toEqual([
      "c0: still holds budget key 1.0",
      "the owner still holds c0's reservation for 1.0",
    ]);
  });

  test("a turn refused for its budget without BUDGET_EXCEEDED, or that code for another cause, is named", () => {
    const w = world();
    const owner = w.members[0]!;
    const uncoded = ev("turn/end", {
      turn: 1,
      reason: "error",
      error: "BUDGET_EXCEEDED: its tree's token budget of 3000 is spent",
    });
    const miscoded = ev("turn/end", {
      turn: 2,
      reason: "error",
      code: "BUDGET_EXCEEDED",
      error: "model call failed",
    });
    w.members = [
      { ...owner, log: [...owner.log.slice(0, 2), uncoded, ev("turn/start", { turn: 2 }), miscoded] },
      w.members[1]!,
    ];
    expect(checkBudget(w).violations).toEqual([
      "owner: turn 1 ended for its budget without BUDGET_EXCEEDED",
      "owner: turn 2 ended BUDGET_EXCEEDED for another cause",
    ]);
  });

  test("a start refused for another cause is named", () => {
    const w = world();
    w.starts = [...w.starts, { status: 500, code: "INTERNAL" }, { status: 503 }];
    expect(checkBudget(w).violations).toEqual([
      "a start was refused 500 INTERNAL, not BUDGET_EXCEEDED",
      "a start was refused 503 (no code), not BUDGET_EXCEEDED",
    ]);
  });
});
