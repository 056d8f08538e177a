import type { TableSql } from "./first-use-tables";
import { ReadMemo } from "./read-memo";
import type { ContentBlock } from "../../src/contract/content";
import type { Jurisdiction, LocationHint } from "../../src/core/placement";

/**
 * The `remote_runs` table: the transport state of one-shot runs on a far side, another deployment
 * (`protocol` remote) or an A2A agent (`a2a`). Remote phases: `create` (POST /v1/sessions there)
 * -> `prompt` (POST its messages) -> `await` (poll its events until the first turn ends; a signed
 * callback may settle the run first) -> `done`. A2A phases: `create` (SendMessage; the task id is
 * `remote_id`) -> `await` (GetTask until the task ends) -> `done`. A run cancelled or timed out
 * after the far side knows it passes through `interrupt` (the remote interrupt, or CancelTask; a
 * bounded number of tries). The provider token and the callback secret live here and in no
 * event, view or log line.
 */

export type RemotePhase = "create" | "prompt" | "await" | "interrupt" | "done";

/** Which far side a row's run is on: another deployment of this runtime, or an A2A agent. */
export type FarSideProtocol = "remote" | "a2a";

/** What the parent asks the remote deployment to run (without the credentials). */
export interface RemoteRequest {
  prompt: ContentBlock[];
  label?: string;
  model?: string;
  jurisdiction?: Jurisdiction;
  locationHint?: LocationHint;
  delegationDepth: number;
  /** The parent's callback route for this run (absent without PUBLIC_URL: polling only). */
  callbackUrl?: string;
}

export interface RemoteRow {
  protocol: FarSideProtocol;
  runId: string;
  url: string;
  token: string | null;
  secret: string;
  request: RemoteRequest;
  remoteId: string | null;
  phase: RemotePhase;
  cursor: number;
  output: ContentBlock[] | null;
  polls: number;
  attempts: number;
  nextAt: number;
  contactAt: number;
  lastError: string | null;
}

type Raw = {
  protocol: string;
  run_id: string;
  url: string;
  token: string | null;
  secret: string;
  request: string;
  remote_id: string | null;
  phase: string;
  cursor: number;
  output: string | null;
  polls: number;
  attempts: number;
  next_at: number;
  contact_at: number;
  last_error: string | null;
};

function toRow(r: Raw): RemoteRow {
  return {
    protocol: r.protocol as FarSideProtocol,
    runId: r.run_id,
    url: r.url,
    token: r.token,
    secret: r.secret,
    request: JSON.parse(r.request) as RemoteRequest,
    remoteId: r.remote_id,
    phase: r.phase as RemotePhase,
    cursor: r.cursor,
    output: r.output === null ? null : (JSON.parse(r.output) as ContentBlock[]),
    polls: r.polls,
    attempts: r.attempts,
    nextAt: r.next_at,
    contactAt: r.contact_at,
    lastError: r.last_error,
  };
}

export class RemoteStore {
  /** Reads of the hot polls, until the next write of the table (read-memo.ts). */
  readonly memo = new ReadMemo();

  constructor(readonly sql: TableSql) {}

  insert(
    row: Pick<RemoteRow, "protocol" | "runId" | "url" | "token" | "secret" | "request">,
    now: number,
  ): void {
    this.memo.changed();
    this.sql.exec(
      `INSERT INTO remote_runs (protocol, run_id, url, token, secret, request, phase, next_at, contact_at)
       VALUES (?, ?, ?, ?, ?, ?, 'create', ?, ?)`,
      row.protocol,
      row.runId,
      row.url,
      row.token,
      row.secret,
      JSON.stringify(row.request),
      now,
      now,
    );
  }

  get(runId: string): RemoteRow | undefined {
    if (!this.sql.exists()) return undefined; // not created yet: empty
    const row = this.sql.exec<Raw>("SELECT * FROM remote_runs WHERE run_id = ?", runId).toArray()[0];
    return row ? toRow(row) : undefined;
  }

  /** Runs of `protocol` with transport work due by `now`, oldest first. */
  due(protocol: FarSideProtocol, now: number, limit = 32): RemoteRow[] {
    const next = this.nextDue(protocol);
    if (next === undefined || next > now) return [];
    return this.sql
      .exec<Raw>(
        "SELECT * FROM remote_runs WHERE protocol = ? AND phase != 'done' AND next_at <= ? ORDER BY next_at LIMIT ?",
        protocol,
        now,
        limit,
      )
      .toArray()
      .map(toRow);
  }

  /** When the earliest transport work of `protocol` is due, if any. */
  nextDue(protocol: FarSideProtocol): number | undefined {
    return this.memo.read(`nextDue:${protocol}`, () => this.#nextDue(protocol), undefined);
  }

  #nextDue(protocol: FarSideProtocol): number | undefined {
    return (
      this.sql
        .exec<{ at: number | null }>(
          "SELECT min(next_at) AS at FROM remote_runs WHERE protocol = ? AND phase != 'done'",
          protocol,
        )
        .one().at ?? undefined
    );
  }

  /** The remote answered: a new phase, its progress, the next wake-up, and a fresh contact time. */
  advance(
    runId: string,
    change: { phase: RemotePhase; nextAt: number; now: number; remoteId?: string; poll?: PollProgress },
  ): void {
    this.memo.changed();
    this.sql.exec(
      `UPDATE remote_runs SET phase = ?, next_at = ?, contact_at = ?, attempts = 0, last_error = NULL,
         remote_id = coalesce(?, remote_id), cursor = coalesce(?, cursor), output = coalesce(?, output),
         polls = polls + ? WHERE run_id = ?`,
      change.phase,
      change.nextAt,
      change.now,
      change.remoteId ?? null,
      change.poll?.cursor ?? null,
      change.poll?.output ? JSON.stringify(change.poll.output) : null,
      change.poll ? 1 : 0,
      runId,
    );
  }

  /** A failed attempt: the error (already scrubbed) and the next try. The contact time stays. */
  failed(runId: string, error: string, nextAt: number): number {
    this.memo.changed();
    return this.sql
      .exec<{ attempts: number }>(
        "UPDATE remote_runs SET attempts = attempts + 1, last_error = ?, next_at = ? WHERE run_id = ? RETURNING attempts",
        error.slice(0, 500),
        nextAt,
        runId,
      )
      .one().attempts;
  }

  /** Moves to `phase` at once (`done`, or `interrupt` after a settlement). */
  setPhase(runId: string, phase: RemotePhase, nextAt: number): void {
    this.memo.changed();
    this.sql.exec(
      "UPDATE remote_runs SET phase = ?, next_at = ?, attempts = 0 WHERE run_id = ? AND phase != 'done'",
      phase,
      nextAt,
      runId,
    );
  }

  /** Makes live transport work due now (a cancel must not wait for the next poll). */
  wake(runId: string, now: number): void {
    this.memo.changed();
    this.sql.exec("UPDATE remote_runs SET next_at = ? WHERE run_id = ? AND phase != 'done'", now, runId);
  }
}

export interface PollProgress {
  cursor: number;
  output: ContentBlock[] | null;
}
