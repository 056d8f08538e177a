import type { RunOrigin } from "../../src/agent/host";
import type { Outcome } from "../../src/contract/errors";
import type { ProviderKind } from "../../src/contract/provider";
import type { RunStart, SubagentResult } from "../../src/contract/run";
import type { CheckedStart } from "../../src/providers/start-checks";
import type { RunRow } from "../store/runs";

/** A one-shot start that passed the provider checks (start-checks.ts), ready for its transport. */
export interface TransportStart extends CheckedStart {
  /**
   * Its `trace`: the span that asked for it (the tool call's, a caller's `traceparent`), which the
   * child's first turn joins.
   */
  request: RunStart;
  /** The tool call that asked for it (absent: an API or RPC caller). */
  origin: RunOrigin | undefined;
}

/**
 * One way a one-shot child runs: `local` (spawn and fork: a child session of this deployment,
 * local-runs.ts), `remote` (another deployment of this runtime), `acp` (an Agent Client Protocol
 * agent), `a2a` (an Agent2Agent agent); a new protocol is a new transport in this folder, given
 * to the runs' owner in session/session-parts.ts. The owner is OneShotRuns
 * (delegation/one-shot/one-shot-runs.ts): it checks each start, picks its transport, settles
 * each run once and keeps the long-poll waiters and dispose. A transport only starts runs,
 * cancels them and reports each one's result once: through the session's `deliver`, or (the local
 * transport, for a run it publishes with its result already in) the owner's `settle`. A
 * transport is a session part too (session/part.ts), for its background work, repairs and due
 * times.
 */
export interface ChildTransport {
  /** Whether this transport runs the providers of `kind`. */
  runs(kind: ProviderKind): boolean;
  /** Whether `run` is one of this transport's. */
  owns(run: RunRow): boolean;
  /**
   * Starts the run: reserves, creates or contacts the child, and publishes `subagent/start`
   * (or answers why not, changing nothing visible). Resolves the run id.
   */
  start(start: TransportStart): Promise<Outcome<string>>;
  /** Inside a transaction: the parent cancels the run; its result arrives `aborted` unless it was in. */
  requestCancel(run: RunRow, reason?: string): void;
}

/**
 * What the local transport needs of the runs' owner (OneShotRuns): settling, inside the
 * publishing transaction, a run whose result arrived before its publication or that was
 * cancelled before its child existed.
 */
export interface RunSettlement {
  /** Inside a transaction: settles the run once (a second call changes nothing). */
  settle(run: RunRow, result: SubagentResult): void;
}
