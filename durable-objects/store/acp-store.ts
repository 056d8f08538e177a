import type { TableSql } from "./first-use-tables";
/**
 * The `acp_runs` table: what a one-shot run on an ACP agent needs to reconnect after its object
 * restarted (semantics.md §12.4): where the agent is and its token (credentials: never copied
 * into an event, view or log line), the agent's session once `session/new` answered, whether the
 * agent offers `session/load`, and how many times the run was resumed (bounded).
 */

export interface AcpRow {
  runId: string;
  url: string;
  token: string | null;
  sessionId: string | null;
  canLoad: boolean;
  resumes: number;
}

type Raw = {
  run_id: string;
  url: string;
  token: string | null;
  session_id: string | null;
  can_load: number;
  resumes: number;
};

export class AcpStore {
  constructor(readonly sql: TableSql) {}

  insert(row: Pick<AcpRow, "runId" | "url" | "token">): void {
    this.sql.exec(
      "INSERT INTO acp_runs (run_id, url, token) VALUES (?, ?, ?)",
      row.runId,
      row.url,
      row.token,
    );
  }

  get(runId: string): AcpRow | undefined {
    if (!this.sql.exists()) return undefined; // not created yet: empty
    const r = this.sql.exec<Raw>("SELECT * FROM acp_runs WHERE run_id = ?", runId).toArray()[0];
    return r
      ? {
          runId: r.run_id,
          url: r.url,
          token: r.token,
          sessionId: r.session_id,
          canLoad: r.can_load === 1,
          resumes: r.resumes,
        }
      : undefined;
  }

  /** The agent's session, once `session/new` answered (before the prompt goes out). */
  setSession(runId: string, sessionId: string, canLoad: boolean): void {
    this.sql.exec(
      "UPDATE acp_runs SET session_id = ?, can_load = ? WHERE run_id = ?",
      sessionId,
      canLoad ? 1 : 0,
      runId,
    );
  }

  /** One more reconnection of the run; resolves how many there have been. */
  countResume(runId: string): number {
    return this.sql
      .exec<{ resumes: number }>(
        "UPDATE acp_runs SET resumes = resumes + 1 WHERE run_id = ? RETURNING resumes",
        runId,
      )
      .one().resumes;
  }
}
