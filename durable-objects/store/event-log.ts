import type { HostSql } from "../host/port";
import type { EventData, EventType, SessionEvent, ToolCall } from "../../src/contract/events";
import { ContextView, VIEW_EVENTS } from "../../src/agent/context-view";
import { fitEvent } from "../../src/core/event-budget";
import { utf8Length } from "../../src/core/quotas";
import type { EventTextRead } from "../../src/contract/session-api";
import { fitting, parsed, type StoredEvent } from "./event-rows";
import { scanPages } from "./event-scan";
import { textPageAfter } from "./event-text-page";

export type { StoredEvent } from "./event-rows";

/** How many of the newest events the log keeps in memory for the reads that follow them. */
const TAIL_MAX = 512;
/** ...and how much of their data: a few large events must not hold an object's memory (128 MB). */
const TAIL_MAX_CHARS = 8 * 1024 * 1024;

/**
 * The append-only event log: `seq` is contiguous from 0, rows are never updated or deleted.
 * Appended events are collected and handed to subscribers only after their transaction commits.
 *
 * The log's tail is kept in memory as stored: every event this instance appended (up to
 * TAIL_MAX, the newest), from `#tailFrom` to the end of the log, since only this log writes the
 * table. A read from inside the tail (a turn's own conversation, its last answer, a page after
 * a recent cursor) needs no query; a rollback forgets the tail.
 *
 * The log keeps the session's model view (context-view.ts) the same way: read once per instance
 * (the latest `context/compacted` and the events after its boundary, never the older part of the
 * log), then fed every appended event; a rollback forgets it.
 *
 * The log also knows its size (the UTF-8 bytes of its rows' `data`, for MAX_LOG_BYTES): asked of
 * SQLite once per instance (`octet_length` reads the row headers, not the data), then kept up to
 * date by every append; a rollback forgets it.
 */
export class EventLog {
  readonly #sql: HostSql;
  #nextSeq: number | undefined;
  #uncommitted: SessionEvent[] = [];
  #tail: StoredEvent[] = [];
  /** The characters of the tail's `json`. */
  #tailChars = 0;
  /** The seq of the tail's first event (the end of the log while it is empty); undefined: none. */
  #tailFrom: number | undefined;
  /** The bytes of `data` the table holds, once known (undefined: ask SQLite). */
  #bytes: number | undefined;
  /** The model's view, once read. */
  #view: ContextView | undefined;
  /** When the newest event was appended, once known (null: the log is empty). */
  #lastAt: number | null | undefined;

  constructor(sql: HostSql) {
    this.#sql = sql;
  }

  /** The table was created just now: the first event gets seq 0 without asking. */
  startEmpty(): void {
    this.#nextSeq = 0;
    this.#lastAt = null;
    this.#tailFrom = 0;
    this.#bytes = 0;
    this.#view = new ContextView();
  }

  /** The bytes of event data the log holds (what MAX_LOG_BYTES bounds). */
  bytes(): number {
    if (this.#bytes === undefined) {
      this.#bytes = this.#sql
        .exec<{ bytes: number }>("SELECT coalesce(sum(octet_length(data)), 0) AS bytes FROM events")
        .one().bytes;
    }
    return this.#bytes;
  }

  /** A row of `json` was written: the known size grows by it (an unknown one is asked later, row included). */
  #grew(json: string): void {
    if (this.#bytes !== undefined) this.#bytes += utf8Length(json);
  }

  nextSeq(): number {
    if (this.#nextSeq === undefined) {
      const row = this.#sql.exec<{ last: number | null }>("SELECT max(seq) AS last FROM events").one();
      this.#nextSeq = row.last === null ? 0 : row.last + 1;
      this.#tail = [];
      this.#tailChars = 0;
      this.#tailFrom = this.#nextSeq;
    }
    return this.#nextSeq;
  }

  /** Keeps an appended row in the tail (it is the log's next seq by construction). */
  #remember(row: StoredEvent): void {
    if (this.#tailFrom === undefined) return;
    this.#tail.push(row);
    this.#tailChars += row.json.length;
    if (this.#tail.length > TAIL_MAX || this.#tailChars > TAIL_MAX_CHARS) {
      // keep the newest half (by count and by size): an older read goes to SQLite
      let dropped = Math.max(0, this.#tail.length - TAIL_MAX / 2);
      let chars = this.#tail.slice(dropped).reduce((n, e) => n + e.json.length, 0);
      while (chars > TAIL_MAX_CHARS / 2 && dropped < this.#tail.length - 1) {
        chars -= this.#tail[dropped]!.json.length;
        dropped += 1;
      }
      this.#tail = this.#tail.slice(dropped);
      this.#tailChars = chars;
      this.#tailFrom += dropped;
    }
  }

  /** The tail from `fromSeq` on, when the tail holds every event from there. */
  #tailFromSeq(fromSeq: number): StoredEvent[] | undefined {
    if (this.#tailFrom === undefined || fromSeq < this.#tailFrom) return undefined;
    return this.#tail.slice(fromSeq - this.#tailFrom);
  }

  /** Appends one event; oversized text is cut to the row budget with a marker, never a storage error. */
  append<T extends EventType>(type: T, input: EventData[T]): number {
    const seq = this.nextSeq();
    const at = Date.now();
    const { data } = fitEvent(input);
    const json = JSON.stringify(data);
    this.#sql.exec("INSERT INTO events (seq, type, at, data) VALUES (?, ?, ?, ?)", seq, type, at, json);
    this.#nextSeq = seq + 1;
    this.#lastAt = at;
    this.#grew(json);
    this.#remember({ seq, type, at, json });
    this.#view?.observe(seq, type, data);
    this.#uncommitted.push({ seq, type, at, data } as SessionEvent);
    return seq;
  }

  /** Appends already-formed events (a fork seed) keeping their types, times and data. */
  appendSeed(events: readonly Pick<SessionEvent, "type" | "at" | "data">[]): void {
    for (const e of events) {
      const seq = this.nextSeq();
      const json = JSON.stringify(e.data);
      this.#sql.exec("INSERT INTO events (seq, type, at, data) VALUES (?, ?, ?, ?)", seq, e.type, e.at, json);
      this.#nextSeq = seq + 1;
      this.#grew(json);
      this.#remember({ seq, type: e.type, at: e.at, json });
      this.#view?.observe(seq, e.type, e.data);
    }
  }

  /** Events appended since the last call, once their transaction committed. */
  takeCommitted(): SessionEvent[] {
    const out = this.#uncommitted;
    this.#uncommitted = [];
    return out;
  }

  /** A transaction rolled back: forget what it appended. */
  rollback(): void {
    this.#uncommitted = [];
    this.#nextSeq = undefined;
    this.#tail = [];
    this.#tailChars = 0;
    this.#tailFrom = undefined;
    this.#bytes = undefined;
    this.#view = undefined;
    this.#lastAt = undefined;
  }

  /** When the newest event was appended (epoch ms; undefined for an empty log). */
  lastAt(): number | undefined {
    if (this.#lastAt === undefined) {
      this.#lastAt =
        this.#sql.exec<{ at: number }>("SELECT at FROM events ORDER BY seq DESC LIMIT 1").toArray()[0]?.at ??
        null;
    }
    return this.#lastAt ?? undefined;
  }

  /**
   * Up to `limit` events after `after`, and past the first no more than `maxBytes` of their data
   * (a page of large events is cut, never read whole: the sizes are read first).
   */
  page(after: number, limit: number, maxBytes = Number.POSITIVE_INFINITY): SessionEvent[] {
    return this.storedPage(after, limit, { maxBytes }).map(parsed);
  }

  /** A page of `GET …/events`: `page`, and where the next one starts (null: the log ends here). */
  pageAfter(after: number, limit: number, maxBytes: number): { events: SessionEvent[]; next: number | null } {
    const events = this.page(after, limit, maxBytes);
    const last = events[events.length - 1];
    const more = last !== undefined && last.seq < this.nextSeq() - 1;
    return { events, next: more ? last.seq : null };
  }

  /**
   * `pageAfter` for a reader that folds the log and shows little of its text (`EventTextRead`):
   * `leave` leaves each message's `content` out inside SQLite, so its text is neither copied out
   * nor parsed, and tells its length (at most its true length: TEXT_CHARS); `only` reads just the
   * events of those seqs. Read from SQLite, never the tail (the tail holds rows whole).
   */
  textPageAfter(
    after: number,
    limit: number,
    maxBytes: number,
    text: EventTextRead,
  ): { events: SessionEvent[]; next: number | null; textChars?: Record<number, number> } {
    return textPageAfter(this.#sql, after, limit, maxBytes, text, () => this.nextSeq() - 1);
  }

  /**
   * `page` with the rows as stored (their `data` JSON unparsed, for a reader that sends it on as
   * it is), and no further than `upTo`.
   */
  storedPage(
    after: number,
    limit: number,
    { maxBytes = Number.POSITIVE_INFINITY, upTo = Number.MAX_SAFE_INTEGER } = {},
  ): StoredEvent[] {
    const wanted = Math.max(0, Math.min(limit, upTo - after));
    const tail = this.#tailFromSeq(after + 1);
    if (tail) {
      const rows = tail.slice(0, wanted);
      return rows.slice(
        0,
        fitting(
          rows.map((e) => e.json.length),
          maxBytes,
        ),
      );
    }
    let count = wanted;
    if (count > 0 && maxBytes !== Number.POSITIVE_INFINITY) {
      const sizes = this.#sql
        .exec<{ bytes: number }>(
          "SELECT octet_length(data) AS bytes FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
          after,
          count,
        )
        .toArray();
      count = fitting(
        sizes.map((r) => r.bytes),
        maxBytes,
      );
    }
    if (count === 0) return [];
    return this.#sql
      .exec<{ seq: number; type: string; at: number; data: string }>(
        "SELECT seq, type, at, data FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
        after,
        count,
      )
      .toArray()
      .map((r) => ({ seq: r.seq, type: r.type as EventType, at: r.at, json: r.data }));
  }

  /** Every event from `fromSeq` of the given types, in order. */
  ofTypes<T extends EventType>(types: readonly T[], fromSeq = 0): SessionEvent<T>[] {
    const tail = this.#tailFromSeq(fromSeq);
    if (tail) return tail.filter((e) => (types as readonly EventType[]).includes(e.type)).map(parsed<T>);
    const marks = types.map(() => "?").join(", ");
    return this.#sql
      .exec<{ seq: number; type: string; at: number; data: string }>(
        `SELECT seq, type, at, data FROM events WHERE seq >= ? AND type IN (${marks}) ORDER BY seq`,
        fromSeq,
        ...types,
      )
      .toArray()
      .map((r) => ({ seq: r.seq, type: r.type as T, at: r.at, data: JSON.parse(r.data) }));
  }

  /**
   * Every event from `fromSeq` of the given types, in order, read from SQLite a page at a time
   * (`SCAN_PAGE_BYTES` of data past a page's first event): a reader that folds them as they come
   * holds one page, never the log. The log may grow meanwhile; the scan ends where it ended when
   * its last page was read.
   */
  *scan<T extends EventType>(types: readonly T[], fromSeq = 0): Generator<SessionEvent<T>> {
    for (const page of this.scanPages(types, fromSeq)) yield* page;
  }

  /**
   * `scan`'s pages themselves, each one read of the log (at most `SCAN_PAGE_BYTES` of data past
   * its first event, the tail's included), ending before `beforeSeq`: a reader that gives the
   * isolate back between pages, while appends go on, still reads the prefix it started with,
   * which no append changes. `leaving`: top-level fields of each event's data the reader never
   * reads (a message's text), left out in SQLite, so they are neither copied out nor parsed.
   */
  *scanPages<T extends EventType>(
    types: readonly T[],
    fromSeq = 0,
    beforeSeq = Number.POSITIVE_INFINITY,
    leaving: readonly string[] = [],
  ): Generator<SessionEvent<T>[]> {
    yield* scanPages(this.#sql, this.#tailFromSeq(fromSeq), types, fromSeq, beforeSeq, leaving);
  }

  /** The newest event of a type at or after `fromSeq`. */
  last<T extends EventType>(type: T, fromSeq = 0): SessionEvent<T> | undefined {
    const tail = this.#tailFromSeq(fromSeq);
    if (tail) {
      const found = tail.findLast((e) => e.type === type);
      return found && parsed<T>(found);
    }
    const row = this.#sql
      .exec<{ seq: number; at: number; data: string }>(
        "SELECT seq, at, data FROM events WHERE type = ? AND seq >= ? ORDER BY seq DESC LIMIT 1",
        type,
        fromSeq,
      )
      .toArray()[0];
    return row ? { seq: row.seq, type, at: row.at, data: JSON.parse(row.data) } : undefined;
  }

  /** The session's model view: built once from the latest compaction on, then kept up to date. */
  view(): ContextView {
    if (this.#view === undefined) {
      const latest = this.last("context/compacted");
      const from = latest ? latest.data.throughSeq + 1 : 0;
      this.#view = ContextView.from(this.ofTypes(VIEW_EVENTS, from), latest);
    }
    return this.#view;
  }

  unansweredToolCalls(fromSeq: number): ToolCall[] {
    const assistant = this.last("assistant/message", fromSeq);
    const calls = assistant?.data.toolCalls ?? [];
    if (calls.length === 0) return [];
    const answered = new Set(this.ofTypes(["tool/result"], assistant!.seq + 1).map((e) => e.data.toolCallId));
    return calls.filter((c) => !answered.has(c.id));
  }
}
