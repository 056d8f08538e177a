import type { Usage } from "../contract/events";

/**
 * Token usage arithmetic: sums of steps into turns, of turns into runs and of sessions into
 * subtrees. Cached and reasoning counts are parts of input and output; a sum keeps them only when
 * some addend reported them.
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
  return sum;
}

export function sumUsage(all: readonly (Usage | undefined)[]): Usage | undefined {
  return all.reduce<Usage | undefined>((sum, u) => addUsage(sum, u), undefined);
}

/** The tokens a budget counts: input plus output. */
export function tokensOf(usage: Usage | undefined): number {
  return usage ? usage.inputTokens + usage.outputTokens : 0;
}
