/**
 * SQL statements run in this isolate while counting is on, with the rows they read and wrote (the
 * profiler's statements per delegation, bench/profile.mjs; the rows an echo turn reads, the
 * `step-at-10k-events` row). Under workerd every object of the Worker runs in the one isolate, so
 * patching the `SqlStorage` prototype once (from any object's storage) sees them all.
 *
 * A cursor's `rowsRead` and `rowsWritten` grow as it is consumed, so the cursors of a counting
 * window are kept and summed when the tally is taken (after the work measured has finished).
 */
const statements = new Map<string, number>();
/** The cursors opened while counting, by statement (at most MAX_CURSORS in all). */
const cursors = new Map<string, SqlStorageCursor<Record<string, SqlStorageValue>>[]>();
/** Enough for a counting window of the benchmark; beyond it the rows are not counted (and say so). */
const MAX_CURSORS = 200_000;
let kept = 0;
let uncounted = 0;
let counting = false;
let patched = false;

export function patchSql(sql: SqlStorage): void {
  if (patched) return;
  patched = true;
  const prototype = Object.getPrototypeOf(sql) as { exec: (...args: unknown[]) => unknown };
  const exec = prototype.exec;
  prototype.exec = function (this: unknown, query: unknown, ...bindings: unknown[]) {
    if (!counting) return exec.call(this, query, ...bindings);
    const key = String(query).replace(/\s+/g, " ").trim().slice(0, 160);
    statements.set(key, (statements.get(key) ?? 0) + 1);
    const cursor = exec.call(this, query, ...bindings);
    if (kept < MAX_CURSORS) {
      kept += 1;
      const list = cursors.get(key) ?? [];
      list.push(cursor as SqlStorageCursor<Record<string, SqlStorageValue>>);
      cursors.set(key, list);
    } else uncounted += 1;
    return cursor;
  };
}

export function countSql(on: boolean): void {
  counting = on;
}

export interface SqlCounts {
  patched: boolean;
  /** How many times each statement ran. */
  statements: Record<string, number>;
  /** The rows each statement read, as its cursors' `rowsRead` counted them. */
  rowsRead: Record<string, number>;
  /** The rows each statement wrote, as its cursors' `rowsWritten` counted them. */
  rowsWritten: Record<string, number>;
  /** Statements past MAX_CURSORS, whose rows are left out of the sums. */
  uncounted: number;
}

/** The tally so far (then reset). */
export function takeSqlCounts(): SqlCounts {
  const rowsRead: Record<string, number> = {};
  const rowsWritten: Record<string, number> = {};
  for (const [key, list] of cursors) {
    rowsRead[key] = list.reduce((n, c) => n + c.rowsRead, 0);
    rowsWritten[key] = list.reduce((n, c) => n + c.rowsWritten, 0);
  }
  const tally = { patched, statements: Object.fromEntries(statements), rowsRead, rowsWritten, uncounted };
  statements.clear();
  cursors.clear();
  kept = 0;
  uncounted = 0;
  return tally;
}
