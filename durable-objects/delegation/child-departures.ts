import type { OneShotRuns } from "./one-shot/one-shot-runs";
import type { SessionContext } from "../session/session-context";

/** The diagnostic of a run whose child was deleted. */
const CHILD_DELETED = "the child was deleted";

/** A child that leaves its parent before the parent does: deleted on its own (not with its parent). */
export class ChildDepartures {
  readonly #ctx: SessionContext;
  readonly #runs: OneShotRuns;

  constructor(ctx: SessionContext, runs: OneShotRuns) {
    this.#ctx = ctx;
    this.#runs = runs;
  }

  /**
   * A child of this session was deleted on its own: its one-shot run ends `aborted`, a
   * continuable epoch of it ends as if it settled `aborted`, and it leaves the listings.
   * Idempotent.
   */
  childDeleted(childId: string): void {
    const { stores } = this.#ctx;
    stores.transact(() => {
      const child = stores.children.get(childId);
      if (!child) return;
      const run = stores.runs.byChildId(childId);
      if (run && run.state !== "settled")
        this.#runs.settle(run, { output: [], stopReason: "aborted", diagnostic: CHILD_DELETED });
      const epoch = child.epochRunId;
      if (epoch !== null && stores.epochs.end(epoch)) {
        stores.log.append("subagent/end", {
          runId: epoch,
          provider: child.provider,
          id: childId,
          local: true,
          stopReason: "aborted",
        });
      }
      stores.children.forget(childId);
    });
    this.#ctx.kick();
  }
}
