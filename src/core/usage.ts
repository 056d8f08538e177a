import type { Spend, Usage } from "../contract/events";

export type { Spend } from "../contract/events";

/**
 * Usage arithmetic: sums of steps into turns, of turns into runs and of sessions into subtrees.
 * Cached and reasoning counts are parts of input and output; a sum keeps them only when some
 * addend reported them. Cost likewise: a sum carries `costUsd` when some addend had a price, and
 * it is the priced addends' total (an unpriced route's tokens add no cost, never a made-up zero).
 */

export function addUsage(a: Usage | undefined, b: Usage | undefined): Usage | undefined {
  if (!a) return b && { ...b };
  if (!b) return { ...a };
  const sum: Usage = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
  };
  const cached = (a.cachedInputTokens ?? 0) + (b.cachedInputTokens ?? 0);
  const reasoning = (a.reasoningTokens ?? 0) + (b.reasoningTokens ?? 0);
  if (a.cachedInputTokens !== undefined || b.cachedInputTokens !== undefined) sum.cachedInputTokens = cached;
  if (a.reasoningTokens !== undefined || b.reasoningTokens !== undefined) sum.reasoningTokens = reasoning;
  if (a.costUsd !== undefined || b.costUsd !== undefined)
    sum.costUsd = roundUsd((a.costUsd ?? 0) + (b.costUsd ?? 0));
  return sum;
}

/**
 * What `a` holds beyond `b`, for counters that only grow (`b` an earlier reading of `a`): undefined
 * when nothing is left.
 */
export function subtractUsage(a: Usage | undefined, b: Usage | undefined): Usage | undefined {
  if (!a) return undefined;
  if (!b) return { ...a };
  const rest: Usage = {
    inputTokens: Math.max(0, a.inputTokens - b.inputTokens),
    outputTokens: Math.max(0, a.outputTokens - b.outputTokens),
  };
  if (a.cachedInputTokens !== undefined)
    rest.cachedInputTokens = Math.max(0, a.cachedInputTokens - (b.cachedInputTokens ?? 0));
  if (a.reasoningTokens !== undefined)
    rest.reasoningTokens = Math.max(0, a.reasoningTokens - (b.reasoningTokens ?? 0));
  const cost = a.costUsd === undefined ? 0 : Math.max(0, roundUsd(a.costUsd - (b.costUsd ?? 0)));
  if (cost > 0) rest.costUsd = cost;
  const left =
    rest.inputTokens + rest.outputTokens + (rest.cachedInputTokens ?? 0) + (rest.reasoningTokens ?? 0) + cost;
  return left > 0 ? rest : undefined;
}

export function sumUsage(all: readonly (Usage | undefined)[]): Usage | undefined {
  return all.reduce<Usage | undefined>((sum, u) => addUsage(sum, u), undefined);
}

/** The tokens a budget counts: input plus output. */
export function tokensOf(usage: Usage | undefined): number {
  return usage ? usage.inputTokens + usage.outputTokens : 0;
}

export const NO_SPEND: Spend = { tokens: 0, usd: 0 };

export function spendOf(usage: Usage | undefined): Spend {
  return { tokens: tokensOf(usage), usd: usage?.costUsd ?? 0 };
}

export function addSpend(a: Spend, b: Spend): Spend {
  return { tokens: a.tokens + b.tokens, usd: roundUsd(a.usd + b.usd) };
}

/**
 * Dollars to 1e-10 (a hundredth of a millionth of a cent): sums of float prices stay stable
 * (0.1 + 0.2 is 0.3) while keeping far more precision than any price list has.
 */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e10) / 1e10;
}
