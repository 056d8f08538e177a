import type { ChildInit } from "../../src/contract/child-init";
import type { SubagentResult } from "../../src/contract/run";

/** A one-shot run as the `runs` table stores it (runs.ts) and as its readers see it. */

export type RunState = "starting" | "running" | "settled";

export interface RunRow {
  runId: string;
  childId: string;
  provider: string;
  local: boolean;
  callKey: string | null;
  taskId: string | null;
  toolName: string | null;
  state: RunState;
  spec: ChildInit;
  result: SubagentResult | null;
  cancelRequested: boolean;
  createdAt: number;
  /** The start request's {@link requestKey} (runs with a caller-reserved child id). */
  requestKey: string | null;
  /** Set while a start that failed ambiguously waits for its caller's retry (see `hold`). */
  heldUntil: number | null;
  /** When the run ends `aborted` if it is still working (its start's `deadlineSeconds`). */
  deadlineAt: number | null;
}

export type RawRun = {
  run_id: string;
  child_id: string;
  provider: string;
  local: number;
  call_key: string | null;
  task_id: string | null;
  tool_name: string | null;
  state: string;
  spec: string;
  result: string | null;
  cancel_requested: number;
  created_at: number;
  request_key: string | null;
  held_until: number | null;
  deadline_at?: number | null;
};

export function toRow(r: RawRun): RunRow {
  return {
    runId: r.run_id,
    childId: r.child_id,
    provider: r.provider,
    local: r.local === 1,
    callKey: r.call_key,
    taskId: r.task_id,
    toolName: r.tool_name,
    state: r.state as RunState,
    spec: JSON.parse(r.spec) as ChildInit,
    result: r.result === null ? null : (JSON.parse(r.result) as SubagentResult),
    cancelRequested: r.cancel_requested === 1,
    createdAt: r.created_at,
    requestKey: r.request_key,
    heldUntil: r.held_until,
    deadlineAt: r.deadline_at ?? null,
  };
}
