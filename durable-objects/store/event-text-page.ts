import type { HostSql } from "../host/port";
import type { SessionEvent } from "../../src/contract/events";
import type { EventTextRead } from "../../src/contract/session-api";
import { fitting } from "./event-rows";

/**
 * The log's text-left pages (`EventTextRead`): a page of `GET …/events` for a reader that folds
 * the log and shows little of its text. Each message's `content` is left out inside SQLite, so its
 * text is neither copied out nor parsed, and its length is told instead; or only the events of
 * given seqs are read. Always read from SQLite, never the log's tail (the tail holds rows whole).
 */

/** Whether a row's `content` is a message's text (what `EventTextRead` is about), as SQL. */
const MESSAGE_TEXT =
  "type IN ('user/message', 'assistant/message') AND json_type(data, '$.content') = 'array'";
/**
 * A content block's text length in SQL, at most its UTF-16 length and 0 only for no text: SQLite's
 * characters (code points, counted up to a NUL) or a third of its UTF-8 bytes, whichever is more.
 */
const TEXT_CHARS =
  "max(length(json_extract(b.value, '$.text')), (octet_length(json_extract(b.value, '$.text')) + 2) / 3)";

/**
 * `EventLog.pageAfter` as `text` asks: `leave` leaves each message's `content` out and tells its
 * length (at most its true length: TEXT_CHARS); `only` reads just the events of those seqs.
 * `lastSeq`: the log's last seq, asked only for `leave`.
 */
export function textPageAfter(
  sql: HostSql,
  after: number,
  limit: number,
  maxBytes: number,
  text: EventTextRead,
  lastSeq: () => number,
): { events: SessionEvent[]; next: number | null; textChars?: Record<number, number> } {
  const leave = "leave" in text;
  const data = leave ? `CASE WHEN ${MESSAGE_TEXT} THEN json_remove(data, '$.content') ELSE data END` : "data";
  const chars = leave
    ? `CASE WHEN ${MESSAGE_TEXT} THEN (SELECT coalesce(sum(${TEXT_CHARS}), 0) FROM json_each(data, '$.content') AS b) END`
    : "NULL";
  const only = leave ? "" : "AND seq IN (SELECT value FROM json_each(?))";
  const seqs = leave ? [] : [JSON.stringify(text.only)];
  const sizes = sql
    .exec<{ bytes: number }>(
      `SELECT octet_length(${data}) AS bytes FROM events WHERE seq > ? ${only} ORDER BY seq LIMIT ?`,
      after,
      ...seqs,
      limit,
    )
    .toArray();
  const count = fitting(
    sizes.map((r) => r.bytes),
    maxBytes,
  );
  const rows =
    count === 0
      ? []
      : sql
          .exec<{ seq: number; type: string; at: number; data: string; chars: number | null }>(
            `SELECT seq, type, at, ${data} AS data, ${chars} AS chars FROM events WHERE seq > ? ${only} ORDER BY seq LIMIT ?`,
            after,
            ...seqs,
            count,
          )
          .toArray();
  const events = rows.map(
    (r) => ({ seq: r.seq, type: r.type, at: r.at, data: JSON.parse(r.data) }) as SessionEvent,
  );
  const last = events[events.length - 1];
  const end = leave ? lastSeq() : Math.max(-1, ...text.only);
  const next = last !== undefined && last.seq < end ? last.seq : null;
  if (!leave) return { events, next };
  const textChars: Record<number, number> = {};
  for (const r of rows) if (r.chars !== null) textChars[r.seq] = r.chars;
  return { events, next, textChars };
}
