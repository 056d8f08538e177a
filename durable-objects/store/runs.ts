import { ReadMemo } from "./read-memo";
import type { RunOrigin } from "../../src/agent/host";
import type { SubagentResult } from "../../src/contract/run";
import type { TableSql } from "./first-use-tables";
import { keepPolls, knownPolls } from "./run-polls";
import { type RawRun, type RunRow, toRow } from "./run-row";

export type { RunRow, RunState } from "./run-row";

/**
 * One-shot runs this session awaits (foreground tool calls, background tasks, API callers). Rows
 * are written before a child is created, so a retried start finds them and re-attaches instead
 * of starting a second child. The children the session owns are in children.ts; a row's stored
 * form is run-row.ts, and the hot polls a write keeps are run-polls.ts.
 */

export class Runs {
  /** Reads of the hot polls, until the next write of `runs` (read-memo.ts). */
  readonly memo = new ReadMemo();

  constructor(readonly sql: TableSql) {}

  insert(
    row: Omit<RunRow, "state" | "result" | "cancelRequested" | "requestKey" | "heldUntil" | "deadlineAt"> & {
      deadlineAt?: number | undefined;
    },
    requestKey?: string,
  ): void {
    const polls = knownPolls(this.memo);
    this.memo.changed();
    const raw: RawRun = {
      run_id: row.runId,
      child_id: row.childId,
      provider: row.provider,
      local: row.local ? 1 : 0,
      call_key: row.callKey,
      task_id: row.taskId,
      tool_name: row.toolName,
      state: "starting",
      spec: JSON.stringify(row.spec),
      result: null,
      cancel_requested: 0,
      created_at: row.createdAt,
      request_key: requestKey ?? null,
      held_until: null,
      deadline_at: row.deadlineAt ?? null,
    };
    this.sql.exec(
      `INSERT INTO runs (run_id, child_id, provider, local, call_key, task_id, tool_name, state, spec, created_at, request_key, deadline_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'starting', ?, ?, ?, ?)`,
      raw.run_id,
      raw.child_id,
      raw.provider,
      raw.local,
      raw.call_key,
      raw.task_id,
      raw.tool_name,
      raw.spec,
      raw.created_at,
      raw.request_key,
      raw.deadline_at,
    );
    // the start reads its run right after: the row as a read would return it; a new row is
    // starting and not held, so it joins the starting ids and changes no other poll
    const inserted: RunRow = { ...toRow({ ...raw, spec: "null" }), spec: row.spec };
    this.memo.remember(`get:${row.runId}`, inserted);
    keepPolls(this.memo, polls, { startingIds: (ids) => [...ids, row.runId] });
  }

  /** A result that arrived while its run was still being published (kept for the publication). */
  keepEarlyResult(runId: string, result: SubagentResult): void {
    this.memo.changed();
    this.sql.exec(
      "UPDATE runs SET result = ? WHERE run_id = ? AND result IS NULL",
      JSON.stringify(result),
      runId,
    );
  }

  /** The columns that tie a run to the tool call that started it (all null for API and RPC starts). */
  originColumns(origin: RunOrigin | undefined): Pick<RunRow, "callKey" | "taskId" | "toolName"> {
    return {
      callKey: origin?.callKey ?? null,
      taskId: origin?.background ? this.nextTaskId() : null,
      toolName: origin?.toolName ?? null,
    };
  }

  get(runId: string): RunRow | undefined {
    return this.memo.read(`get:${runId}`, () => this.#get(runId), undefined);
  }

  #get(runId: string): RunRow | undefined {
    return this.#one("SELECT * FROM runs WHERE run_id = ?", runId);
  }

  /** The run of a child (a one-shot child has exactly one). */
  byChildId(childId: string): RunRow | undefined {
    return this.#one("SELECT * FROM runs WHERE child_id = ?", childId);
  }

  /**
   * Holds a start that failed ambiguously (its child may exist) until `until`: it is neither
   * repaired nor counted as running, a result that arrives is kept, and the caller's retry of the
   * same request takes it up again (`unhold`). Past `until` it is abandoned.
   */
  hold(runId: string, until: number): void {
    this.memo.changed();
    this.sql.exec("UPDATE runs SET held_until = ? WHERE run_id = ? AND state = 'starting'", until, runId);
  }

  unhold(runId: string): void {
    this.memo.changed();
    this.sql.exec("UPDATE runs SET held_until = NULL WHERE run_id = ?", runId);
  }

  /** Held starts whose retry window has passed by `now` (every held start for `Infinity`). */
  heldExpired(now: number): RunRow[] {
    const next = this.nextHeldExpiry();
    if (next === undefined || next > now) return [];
    return this.sql
      .exec<RawRun>("SELECT * FROM runs WHERE held_until IS NOT NULL AND held_until <= ?", now)
      .toArray()
      .map(toRow);
  }

  nextHeldExpiry(): number | undefined {
    return this.memo.read("nextHeldExpiry", () => this.#nextHeldExpiry(), undefined);
  }

  #nextHeldExpiry(): number | undefined {
    const row = this.sql
      .exec<{ at: number | null }>("SELECT min(held_until) AS at FROM runs WHERE held_until IS NOT NULL")
      .one();
    return row.at ?? undefined;
  }

  /** The earliest deadline of a run not settled yet (none: no such run has one). */
  nextDeadline(): number | undefined {
    return this.memo.read(
      "nextDeadline",
      () =>
        this.sql
          .exec<{ at: number | null }>(
            "SELECT min(deadline_at) AS at FROM runs WHERE deadline_at IS NOT NULL AND state != 'settled'",
          )
          .one().at ?? undefined,
      undefined,
    );
  }

  /** Runs not settled whose deadline has passed by `now`. */
  pastDeadline(now: number): RunRow[] {
    const next = this.nextDeadline();
    if (next === undefined || next > now) return [];
    return this.sql
      .exec<RawRun>("SELECT * FROM runs WHERE deadline_at <= ? AND state != 'settled'", now)
      .toArray()
      .map(toRow);
  }

  byCallKey(callKey: string): RunRow | undefined {
    return this.#one("SELECT * FROM runs WHERE call_key = ?", callKey);
  }

  byTaskId(taskId: string): RunRow | undefined {
    return this.#one("SELECT * FROM runs WHERE task_id = ?", taskId);
  }

  nextTaskId(): string {
    const n = this.sql
      .exec<{ n: number }>("SELECT count(*) AS n FROM runs WHERE task_id IS NOT NULL")
      .one().n;
    return `subagent-${n + 1}`;
  }

  /** starting -> running, once; false when another publisher got there first. */
  markRunning(runId: string): boolean {
    const polls = knownPolls(this.memo);
    const row = this.memo.known<RunRow | undefined>(`get:${runId}`, undefined)?.value;
    this.memo.changed();
    const changed =
      this.sql
        .exec(
          "UPDATE runs SET state = 'running' WHERE run_id = ? AND state = 'starting' RETURNING run_id",
          runId,
        )
        .toArray().length > 0;
    if (!changed) {
      keepPolls(this.memo, polls, {}, row && { runId, row });
      return false;
    }
    // what the polls become is known when the row is: it left the starting ids and joined the
    // running local children or the far-side runs
    const running = row && { ...row, state: "running" as const };
    keepPolls(
      this.memo,
      polls,
      {
        startingIds: (ids) => ids.filter((id) => id !== runId),
        runningLocalChildren: running
          ? (ids) => (running.local ? [...ids, running.childId] : ids)
          : undefined,
        unsettledRemote: running ? (rows) => (running.local ? rows : [...rows, running]) : undefined,
      },
      running && { runId, row: running },
    );
    return true;
  }

  /** Records the result once; resolves false if the run was already settled. */
  settle(runId: string, result: SubagentResult): boolean {
    const polls = knownPolls(this.memo);
    const row = this.memo.known<RunRow | undefined>(`get:${runId}`, undefined)?.value;
    this.memo.changed();
    const changed =
      this.sql
        .exec(
          "UPDATE runs SET state = 'settled', result = ? WHERE run_id = ? AND state != 'settled' RETURNING run_id",
          JSON.stringify(result),
          runId,
        )
        .toArray().length > 0;
    if (!changed) {
      keepPolls(this.memo, polls, {}, row && { runId, row });
      return false;
    }
    // a settled run leaves every poll of unsettled runs (a held one stays held: its expiry stays)
    const settled = row && { ...row, state: "settled" as const, result };
    keepPolls(
      this.memo,
      polls,
      {
        startingIds: (ids) => ids.filter((id) => id !== runId),
        runningLocalChildren: row
          ? (ids) => (row.local && row.state === "running" ? ids.filter((id) => id !== row.childId) : ids)
          : undefined,
        unsettledRemote: (rows) => rows.filter((r) => r.runId !== runId),
      },
      settled && { runId, row: settled },
    );
    return true;
  }

  requestCancel(runId: string): void {
    this.memo.changed();
    this.sql.exec("UPDATE runs SET cancel_requested = 1 WHERE run_id = ?", runId);
  }

  delete(runId: string): void {
    this.memo.changed();
    this.sql.exec("DELETE FROM runs WHERE run_id = ?", runId);
  }

  unsettled(): RunRow[] {
    if (!this.sql.exists()) return []; // not created yet: empty
    return this.sql
      .exec<RawRun>("SELECT * FROM runs WHERE state != 'settled' AND held_until IS NULL")
      .toArray()
      .map(toRow);
  }

  /** Ids of runs reserved but not yet published, held ones aside (cheap: no spec parsing). */
  startingIds(): string[] {
    return this.memo.read("startingIds", () => this.#startingIds(), []);
  }

  #startingIds(): string[] {
    return this.sql
      .exec<{ run_id: string }>("SELECT run_id FROM runs WHERE state = 'starting' AND held_until IS NULL")
      .toArray()
      .map((r) => r.run_id);
  }

  /** Runs whose start was interrupted (the object died between reserving and publishing). */
  starting(): RunRow[] {
    if (!this.sql.exists()) return []; // not created yet: empty
    return this.sql
      .exec<RawRun>("SELECT * FROM runs WHERE state = 'starting' AND held_until IS NULL ORDER BY created_at")
      .toArray()
      .map(toRow);
  }

  /** Runs handed to another deployment (they have no child session here). */
  remoteCount(): number {
    if (!this.sql.exists()) return 0; // not created yet: empty
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM runs WHERE local = 0").one().n;
  }

  /** Published runs with no child session here (remote and ACP) that have no result yet. */
  unsettledRemote(): RunRow[] {
    return this.memo.read("unsettledRemote", () => this.#unsettledRemote(), []);
  }

  #unsettledRemote(): RunRow[] {
    return this.sql
      .exec<RawRun>("SELECT * FROM runs WHERE state = 'running' AND local = 0")
      .toArray()
      .map(toRow);
  }

  /** Children of published local runs without a result yet (the parent's watchdog looks after them). */
  runningLocalChildren(): string[] {
    return this.memo.read("runningLocalChildren", () => this.#runningLocalChildren(), []);
  }

  #runningLocalChildren(): string[] {
    return this.sql
      .exec<{ child_id: string }>("SELECT child_id FROM runs WHERE state = 'running' AND local = 1")
      .toArray()
      .map((r) => r.child_id);
  }

  unsettledCount(): number {
    if (!this.sql.exists()) return 0; // not created yet: empty
    return this.sql
      .exec<{ n: number }>("SELECT count(*) AS n FROM runs WHERE state != 'settled' AND held_until IS NULL")
      .one().n;
  }

  /** Foreground calls (by call key) whose child is still running: the turn waits for them. */
  inFlight(callKeys: readonly string[]): Set<string> {
    if (!this.sql.exists()) return new Set(); // not created yet: empty
    if (callKeys.length === 0) return new Set();
    const marks = callKeys.map(() => "?").join(", ");
    return new Set(
      this.sql
        .exec<{ call_key: string }>(
          `SELECT call_key FROM runs WHERE task_id IS NULL AND state != 'settled' AND call_key IN (${marks})`,
          ...callKeys,
        )
        .toArray()
        .map((r) => r.call_key),
    );
  }

  /** Unsettled foreground runs started by calls of one turn (cancelled when that turn ends early). */
  foregroundOfTurn(turn: number): RunRow[] {
    return this.memo.read(
      `foreground:${turn}`,
      () =>
        this.sql
          .exec<RawRun>(
            "SELECT * FROM runs WHERE task_id IS NULL AND state != 'settled' AND call_key LIKE ?",
            `${turn}:%`,
          )
          .toArray()
          .map(toRow),
      [],
    );
  }

  #one(query: string, ...bindings: unknown[]): RunRow | undefined {
    if (!this.sql.exists()) return undefined; // not created yet: empty
    const row = this.sql.exec<RawRun>(query, ...bindings).toArray()[0];
    return row ? toRow(row) : undefined;
  }
}
