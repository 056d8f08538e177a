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
  const left =
    rest.inputTokens + rest.outputTokens + (rest.cachedInputTokens ?? 0) + (rest.reasoningTokens ?? 0);
  return left > 0 ? rest : undefined;
}

export function sumUsage(all: readonly (Usage | undefined)[]): Usage | undefined {
  return all.reduce<Usage | undefined>((sum, u) => addUsage(sum, u), undefined);
}

/** The tokens a budget counts: input plus output. */
export function tokensOf(usage: Usage | undefined): number {
  return usage ? usage.inputTokens + usage.outputTokens : 0;
}
