import type { Outcome } from "../contract/errors";
import type { RunView, StartRequest } from "../contract/run";

/**
 * What built-in tools may ask of the session that runs them. Implemented by the Session object;
 * kept as an interface so tools stay runtime-agnostic.
 */
export interface SessionHost {
  readonly sessionId: string;
  /**
   * Starts a one-shot child for a tool call. Idempotent by `callKey`: a re-run of the same call
   * (after a crash) re-attaches to the run it already started.
   */
  startRun(request: StartRequest, origin: RunOrigin): Promise<Outcome<RunView>>;
  task(taskId: string): RunView | undefined;
  killTask(taskId: string, reason: string): Outcome<{ accepted: true }>;
}

export interface RunOrigin {
  callKey: string;
  toolName: string;
  background: boolean;
}
