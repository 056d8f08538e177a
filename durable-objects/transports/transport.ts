import type { RunOrigin } from "../../src/agent/host";
import type { Outcome } from "../../src/contract/errors";
import type { ProviderKind } from "../../src/contract/provider";
import type { StartRequest } from "../../src/contract/run";
import type { CheckedStart } from "../../src/providers/start-checks";
import type { RunRow } from "../store/runs";

/** A one-shot start that passed the provider checks (start-checks.ts), ready for its transport. */
export interface TransportStart extends CheckedStart {
  request: StartRequest;
  /** The tool call that asked for it (absent: an API or RPC caller). */
  origin: RunOrigin | undefined;
}

/**
 * One way a one-shot child runs: `local` (spawn and fork: a child session of this deployment),
 * `remote` (another deployment of this runtime), `acp` (an Agent Client Protocol agent); a new
 * protocol is a new transport in this folder, registered in session-parts.ts. One-shot runs
 * (one-shot-runs.ts) own what every transport shares: the run rows, the one result, its
 * waiters, dispose; a transport starts runs, cancels them and reports each one's result once
 * (through the session's `deliver`, or the run ledger). A transport is a session part too
 * (session/part.ts), for its background work, repairs and due times.
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
