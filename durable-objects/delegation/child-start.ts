import type { Outcome } from "../../src/contract/errors";
import { isOverloaded } from "../../src/core/overloaded";

/** Attempts of one child `init` before a start gives up on it. */
const INIT_ATTEMPTS = 3;

/**
 * The one retry policy of every child creation (one-shot and continuable): `init` is idempotent
 * for the same parent and run, so a failed attempt is retried at once, up to three attempts, but
 * never after `overloaded` (the object has too much queued: retrying at once makes it worse).
 * Resolves the child's answer, or `undefined` when no attempt answered: the start is ambiguous
 * then, since an `init` may have landed unseen.
 */
export async function initChild<T>(attempt: () => Promise<Outcome<T>>): Promise<Outcome<T> | undefined> {
  for (let n = 0; n < INIT_ATTEMPTS; n++) {
    try {
      return await attempt();
    } catch (error) {
      if (isOverloaded(error)) return undefined;
    }
  }
  return undefined;
}
