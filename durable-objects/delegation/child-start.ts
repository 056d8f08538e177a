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

/**
 * The child creations this instance is running right now, one-shot and continuable alike, by the
 * run id they start (a one-shot run, or a continuable epoch), each with its outcome: repair must
 * not race one, and a retry of a start waits for the same outcome instead of answering before it
 * is known. Memory only: a new instance has none, and its repair finishes what an earlier one left.
 */
export class StartsInFlight<T> {
  readonly #running = new Map<string, Promise<T>>();

  /** Runs `attempt` as the creation in flight for `runId` until it settles. */
  run(runId: string, attempt: () => Promise<T>): Promise<T> {
    const running = attempt().finally(() => this.#running.delete(runId));
    this.#running.set(runId, running);
    return running;
  }

  /** The outcome of the creation in flight for `runId`, if there is one. */
  get(runId: string): Promise<T> | undefined {
    return this.#running.get(runId);
  }

  has(runId: string): boolean {
    return this.#running.has(runId);
  }
}
