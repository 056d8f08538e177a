import { type Failure, fail } from "../contract/errors";
import { positiveInt } from "./positive-int";

/**
 * The largest context window a session or a start may name (`MAX_CONTEXT_WINDOW`; an absent or
 * malformed var means the default). A session's window is where its view is compacted, so a
 * window far past any model's would never compact and send its whole log on every step. Pure.
 */
export const DEFAULT_MAX_CONTEXT_WINDOW = 1_000_000;

/** The refusal of a requested `contextWindow` above the deployment's limit, if it is. */
export function contextWindowRefusal(
  requested: number | undefined,
  raw: string | undefined,
): Failure | undefined {
  const max = positiveInt(raw, DEFAULT_MAX_CONTEXT_WINDOW);
  if (requested === undefined || requested <= max) return undefined;
  return fail(
    "INVALID_REQUEST",
    `contextWindow: ${requested} is above this deployment's limit of ${max} tokens (MAX_CONTEXT_WINDOW)`,
  );
}
