import type { Outcome } from "../contract/errors";
import type { ChildFollowup, ChildReport } from "../contract/continuable";
import type { RunStart, RunView } from "../contract/run";
import type { Traced } from "../contract/trace";
import type { ChildEntry, DescendantEntry } from "../contract/listing";

/**
 * What built-in tools may ask of the session that runs them. Implemented over the session's parts
 * (durable-objects/session/session-host.ts); an interface, so the tools know nothing of objects.
 */
export interface SessionHost extends ContinuationHost {
  readonly sessionId: string;
  /**
   * Starts a one-shot child for a tool call (`trace`: the call's span, which the child's first turn
   * joins, README "Traces"). Idempotent by `callKey`: a re-run of the same call (after a crash)
   * re-attaches to the run it already started.
   */
  startRun(request: RunStart, origin: RunOrigin): Promise<Outcome<RunView>>;
  task(taskId: string): RunView | undefined;
  killTask(taskId: string, reason: string): Outcome<{ accepted: true }>;
  /**
   * `schedule_message`: a message to this session later, once after `delaySeconds` or at every
   * time of `cron`; idempotent by `callKey`. `id`: the scheduled message's id, or the schedule's.
   */
  scheduleMessage(
    request: { message: string; delaySeconds: number } | { message: string; cron: string; timezone?: string },
    callKey: string,
  ): Promise<Outcome<{ id: string; next: number }>>;
}

export interface RunOrigin {
  callKey: string;
  toolName: string;
  background: boolean;
}

/** The continuable-child operations the control tools use. */
export interface ContinuationHost {
  /**
   * `callKey` makes a start from a tool call idempotent across re-runs of that call; `trace`: the
   * call's span, which the child's first turn joins.
   */
  startContinuable(
    request: {
      provider: string;
      prompt: string;
      label: string;
      maxDepth?: number;
      deadlineSeconds?: number;
    } & Traced,
    callKey?: string,
  ): Promise<Outcome<{ childId: string; messageId: string }>>;
  /** `callKey` makes a follow-up from a tool call land once across re-runs of that call. */
  followup(
    childId: string,
    message: ChildFollowup,
    callKey?: string,
  ): Promise<Outcome<{ messageId: string }>>;
  interruptAgent(targetId: string): Promise<Outcome<{ accepted: true }>>;
  listAgents(scope: "children" | "descendants"): Promise<Outcome<(ChildEntry | DescendantEntry)[]>>;
  /**
   * The `report` tool: one report to the parent for the tool call `callKey`; the same call run
   * again after a restart is the same report (the parent applies it once).
   */
  report(report: ChildReport, callKey: string): Promise<Outcome<{ messageId: string }>>;
}
