import { describe, expect, it } from "vitest";
import { parsePrices, priced, priceOf } from "../../../src/core/prices";
import { addUsage, subtractUsage, sumUsage } from "../../../src/core/usage";

/** MODEL_PRICES and costUsd (README "Prices and budgets"). */

const PRICES = parsePrices(
  JSON.stringify({
    "openai:gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 },
    "openai:*": { input: 2.5, output: 10 },
    "openai:gpt-4o*": { input: 5, output: 15 },
  }),
).prices;

describe("MODEL_PRICES", () => {
  it("prices a route exactly, else by its longest prefix, else not at all", () => {
    expect(priceOf(PRICES, "openai:gpt-4o-mini")).toEqual({ input: 0.15, output: 0.6, cachedInput: 0.075 });
    expect(priceOf(PRICES, "openai:gpt-4o-2024")).toEqual({ input: 5, output: 15 });
    expect(priceOf(PRICES, "openai:o3")).toEqual({ input: 2.5, output: 10 });
    expect(priceOf(PRICES, "workers-ai:@cf/meta/llama")).toBeUndefined();
  });

  it("turns usage into dollars per million tokens, cached input at its own price", () => {
    const usage = { inputTokens: 1_000_000, outputTokens: 500_000, cachedInputTokens: 400_000 };
    // 600k fresh input at 0.15 + 400k cached at 0.075 + 500k output at 0.6
    expect(priced(usage, "openai:gpt-4o-mini", PRICES)).toEqual({ ...usage, costUsd: 0.09 + 0.03 + 0.3 });
    // no cached price: cached input costs what input does
    expect(
      priced({ inputTokens: 100, outputTokens: 10, cachedInputTokens: 50 }, "openai:o3", PRICES)?.costUsd,
    ).toBe(0.00035);
    // a route with no price has no cost, never a made-up zero
    expect(priced({ inputTokens: 5, outputTokens: 5 }, "scripted", PRICES)).toEqual({
      inputTokens: 5,
      outputTokens: 5,
    });
  });

  it("refuses a malformed list as a whole (no route has a price) and says what is wrong", () => {
    for (const [raw, problem] of [
      ["not json", "MODEL_PRICES is not JSON"],
      ["[1]", "MODEL_PRICES is not a JSON object of routes"],
      ['{"a": {"input": 1}}', "input and output must be non-negative numbers"],
      ['{"a": {"input": -1, "output": 1}}', "input and output must be non-negative numbers"],
      ['{"a": {"input": 1, "output": 1, "cached": 1}}', 'unknown field "cached"'],
      ['{"a": {"input": 1, "output": 1, "cachedInput": "1"}}', "cachedInput must be a non-negative number"],
    ]) {
      const parsed = parsePrices(raw);
      expect(parsed.problem, raw).toContain(problem);
      expect(parsed.prices.exact.size + parsed.prices.prefixes.length).toBe(0);
    }
    expect(parsePrices(undefined)).toEqual({ prices: parsePrices("").prices });
  });
});

describe("costUsd in sums", () => {
  it("sums the priced part, keeps no cost where nothing was priced, and subtracts what was reported", () => {
    const a = { inputTokens: 10, outputTokens: 1, costUsd: 0.1 };
    const b = { inputTokens: 20, outputTokens: 2, costUsd: 0.2 };
    const unpriced = { inputTokens: 5, outputTokens: 5 };
    expect(addUsage(a, b)).toEqual({ inputTokens: 30, outputTokens: 3, costUsd: 0.3 });
    expect(sumUsage([a, unpriced])).toEqual({ inputTokens: 15, outputTokens: 6, costUsd: 0.1 });
    expect(sumUsage([unpriced, unpriced])).toEqual({ inputTokens: 10, outputTokens: 10 });
    expect(subtractUsage(addUsage(a, b), a)).toEqual(b);
    // only cost left (a report of the tokens that came before a price): still something to report
    expect(subtractUsage({ inputTokens: 10, outputTokens: 1, costUsd: 0.3 }, a)).toEqual({
      inputTokens: 0,
      outputTokens: 0,
      costUsd: 0.2,
    });
  });
});
