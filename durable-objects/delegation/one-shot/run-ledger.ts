import type { SubagentResult } from "../../../src/contract/run";
import type { SessionContext } from "../../session/session-context";
import type { RunRow } from "../../store/runs";
import type { RunSettlement } from "../../transports/transport";

/** What one-shot-runs.ts's compatibility constructor does with a {@link RunLedger}. */
export interface SettlementForwarder {
  forwardTo(owner: RunSettlement): void;
}

/**
 * @deprecated Not an owner: the one owner of one-shot runs, their settlement and their waiters is
 * OneShotRuns (one-shot-runs.ts). This forwards the local transport's settlements to it while
 * session/session-parts.ts still builds `new RunLedger(ctx)`, `new LocalRuns(ctx, ledger)` and
 * `new OneShotRuns(ctx, ledger, transports)`; it goes when that builds
 * `new OneShotRuns(ctx, [remote, acp, a2a])`, whose local transport is `runs.local`.
 */
export class RunLedger implements RunSettlement, SettlementForwarder {
  #owner: RunSettlement | undefined;

  // biome-ignore lint/complexity/noUselessConstructor: session-parts.ts builds it as `new RunLedger(ctx)`
  constructor(_ctx: SessionContext) {}

  forwardTo(owner: RunSettlement): void {
    this.#owner = owner;
  }

  settle(run: RunRow, result: SubagentResult): void {
    if (!this.#owner) throw new Error("no one-shot runs were built over this RunLedger");
    this.#owner.settle(run, result);
  }
}
