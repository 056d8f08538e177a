import type { HostSql } from "../host/port";
import type { EventType, SessionEvent } from "../../src/contract/events";
import { fitting, parsed, type StoredEvent, without } from "./event-rows";

/**
 * The log's span reads (the trace's folds read them): the events of some types from a seq on, a
 * page at a time, so a reader that folds them as they come holds one page, never the log. A page
 * is read from the log's tail when the tail holds every event from there, else from SQLite.
 */

/** How much event data one read of `scan` holds at a time (past its first event). */
const SCAN_PAGE_BYTES = 256 * 1024;
/** How many rows one read of `scan` looks at, at most. */
const SCAN_PAGE_ROWS = 256;

/**
 * The pages of EventLog.scanPages (see there): `tail`, the log's tail from `fromSeq` on when it
 * holds every event from there.
 */
export function* scanPages<T extends EventType>(
  sql: HostSql,
  tail: StoredEvent[] | undefined,
  types: readonly T[],
  fromSeq: number,
  beforeSeq: number,
  leaving: readonly string[],
): Generator<SessionEvent<T>[]> {
  if (tail) {
    const rows = tail.filter((e) => e.seq < beforeSeq && (types as readonly EventType[]).includes(e.type));
    const sizes = rows.map((e) => e.json.length);
    for (let at = 0; at < rows.length; ) {
      const count = fitting(sizes.slice(at), SCAN_PAGE_BYTES);
      yield rows.slice(at, at + count).map((e) => without(parsed<T>(e), leaving));
      at += count;
    }
    return;
  }
  const marks = types.map(() => "?").join(", ");
  const before = Number.isFinite(beforeSeq) ? beforeSeq : Number.MAX_SAFE_INTEGER;
  const data = leaving.length === 0 ? "data" : `json_remove(data${", ?".repeat(leaving.length)})`;
  const paths = leaving.map((field) => `$.${field}`);
  for (let from = fromSeq; ; ) {
    const sizes = sql
      .exec<{ seq: number; bytes: number }>(
        `SELECT seq, octet_length(data) AS bytes FROM events WHERE seq >= ? AND seq < ? AND type IN (${marks}) ORDER BY seq LIMIT ?`,
        from,
        before,
        ...types,
        SCAN_PAGE_ROWS,
      )
      .toArray();
    if (sizes.length === 0) return;
    const count = fitting(
      sizes.map((r) => r.bytes),
      SCAN_PAGE_BYTES,
    );
    const through = sizes[count - 1]!.seq;
    yield sql
      .exec<{ seq: number; type: string; at: number; data: string }>(
        `SELECT seq, type, at, ${data} AS data FROM events WHERE seq >= ? AND seq <= ? AND type IN (${marks}) ORDER BY seq`,
        ...paths,
        from,
        through,
        ...types,
      )
      .toArray()
      .map((r) => ({ seq: r.seq, type: r.type as T, at: r.at, data: JSON.parse(r.data) }));
    from = through + 1;
  }
}
