import type { ModelParams } from "./model";
import type { ModelCallPolicy } from "./model-calls";
import type { Prices } from "../core/prices";

/** Model calls one turn may make before it ends as `error` (`MAX_STEPS_PER_TURN` overrides). */
export const MAX_STEPS_PER_TURN = 64;

/**
 * What the turns of one session run with, from its header and the deployment's vars, read at
 * each step (a session's header may not exist yet when its object is built).
 */
export interface TurnSettings {
  /** Empty before the session is created (its fault points are then unscoped). */
  sessionId: string;
  modelRoute: string;
  /** The persona, sent as the system prompt. */
  system: string | undefined;
  /** The session's sampling parameters, when it sets any. */
  params: ModelParams | undefined;
  /** The step budget of one turn (MAX_STEPS_PER_TURN). */
  maxSteps: number;
  /** Timeout, retries and the per-step attempt budget of model calls. */
  policy: ModelCallPolicy;
  /** What the deployment's models cost (MODEL_PRICES): usage is priced as it is recorded. */
  prices: Prices;
  /** The log quota (MAX_LOG_BYTES), checked before each model step. */
  maxLogBytes: number;
  /** The session's own context window (`contextWindow`), when it names one. */
  contextWindow: number | undefined;
  /** The window of a session and model route that name none (DEFAULT_CONTEXT_WINDOW). */
  defaultContextWindow: number;
  /** The route that writes compaction summaries (COMPACTION_MODEL), else the session's own. */
  compactionRoute: string | undefined;
  /** Tool names and prefixes whose calls wait for approval: the session's and REQUIRE_APPROVAL's. */
  requireApproval: readonly string[];
  /** How long an approval may stay pending before it is denied (none: as long as it takes). */
  approvalTimeoutMs: number | undefined;
}
