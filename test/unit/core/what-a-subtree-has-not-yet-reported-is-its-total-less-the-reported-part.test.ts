import { expect, it } from "vitest";
import { subtractUsage } from "../../../src/core/usage";

/**
 * A continuable child reports with each epoch's notice what its subtree used since its previous
 * notice (semantics.md §8): its running total less what it reported before, side by side.
 */

it("what a subtree has not yet reported is its total less the reported part, side by side; nothing left is undefined", () => {
  expect(subtractUsage(undefined, undefined)).toBeUndefined();
  expect(subtractUsage({ inputTokens: 5, outputTokens: 7 }, undefined)).toEqual({
    inputTokens: 5,
    outputTokens: 7,
  });
  expect(
    subtractUsage(
      { inputTokens: 9, outputTokens: 7, cachedInputTokens: 4, reasoningTokens: 3 },
      { inputTokens: 5, outputTokens: 7, cachedInputTokens: 1 },
    ),
  ).toEqual({ inputTokens: 4, outputTokens: 0, cachedInputTokens: 3, reasoningTokens: 3 });
  expect(
    subtractUsage({ inputTokens: 5, outputTokens: 7 }, { inputTokens: 5, outputTokens: 7 }),
  ).toBeUndefined();
});
