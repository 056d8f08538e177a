import { describe, expect, it } from "vitest";
import type { DescendantEntry } from "../../../src/contract/listing";
import { withSubtreeUsage } from "../../../src/core/descendants";
import { addUsage, sumUsage, tokensOf } from "../../../src/core/usage";

describe("usage arithmetic", () => {
  it("adds sides and keeps cached and reasoning counts only where some addend had them", () => {
    expect(addUsage(undefined, undefined)).toBeUndefined();
    expect(addUsage({ inputTokens: 1, outputTokens: 2 }, undefined)).toEqual({
      inputTokens: 1,
      outputTokens: 2,
    });
    expect(
      addUsage(
        { inputTokens: 1, outputTokens: 2 },
        { inputTokens: 3, outputTokens: 4, cachedInputTokens: 2 },
      ),
    ).toEqual({
      inputTokens: 4,
      outputTokens: 6,
      cachedInputTokens: 2,
    });
    expect(
      sumUsage([
        { inputTokens: 1, outputTokens: 0, reasoningTokens: 5 },
        undefined,
        { inputTokens: 2, outputTokens: 9 },
      ]),
    ).toEqual({
      inputTokens: 3,
      outputTokens: 9,
      reasoningTokens: 5,
    });
    expect(tokensOf({ inputTokens: 3, outputTokens: 4 })).toBe(7);
    expect(tokensOf(undefined)).toBe(0);
  });

  it("rolls pre-order rows up into subtree totals", () => {
    const row = (id: string, parentId: string, depth: number, tokens?: number): DescendantEntry => ({
      kind: "child",
      id,
      parentId,
      depth,
      activity: "inactive",
      hasChildren: false,
      mode: "one-shot",
      status: "idle",
      provider: "spawn",
      createdAt: 0,
      ...(tokens === undefined ? {} : { usage: { inputTokens: tokens, outputTokens: 0 } }),
    });
    // r ─ a ─ a1
    //   │   └ a2 ─ a21
    //   └ b (no usage) ─ b1
    const rows = [
      row("a", "r", 1, 1),
      row("a1", "a", 2, 10),
      row("a2", "a", 2, 100),
      row("a21", "a2", 3, 1000),
      row("b", "r", 1),
      row("b1", "b", 2, 7),
    ];
    const totals = withSubtreeUsage(rows).map((r) => [r.id, r.subtreeUsage?.inputTokens]);
    expect(totals).toEqual([
      ["a", 1111],
      ["a1", 10],
      ["a2", 1100],
      ["a21", 1000],
      ["b", 7],
      ["b1", 7],
    ]);
  });
});
