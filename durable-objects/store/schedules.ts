import type { SqlValue } from "../host/port";
import type { MessageDelivery } from "../../src/contract/control";
import type { WireContent } from "../../src/contract/content";
import type { MessageSource } from "../../src/contract/events";
import type { TableSql } from "./first-use-tables";

/**
 * A message a session will receive later: once at `nextAt` (a message sent with `notBefore`, or a
 * model's `schedule_message` with a delay), or at every time of a cron expression (a schedule).
 */
export interface ScheduleRow {
  scheduleId: string;
  /** A recurring schedule's cron and time zone (none: a message delivered once). */
  cron?: string;
  timezone?: string;
  /** The next firing time, epoch ms. */
  nextAt: number;
  /** As its sender gave it (a string or text blocks): listed so, delivered as blocks. */
  content: WireContent;
  source: MessageSource;
  delivery: MessageDelivery;
  /** A message delivered once: the id its sender was given at acceptance. */
  messageId?: string;
  /** A message delivered once: its sender's idempotency key, and its fingerprint. */
  idempotencyKey?: string;
  contentHash: string;
  createdAt: number;
  /** A recurring schedule: the message of its last firing (a firing while it waits adds none). */
  lastMessageId?: string;
}

interface Row extends Record<string, SqlValue> {
  schedule_id: string;
  cron: string | null;
  timezone: string | null;
  next_at: number;
  content: string;
  source: string;
  delivery: string;
  message_id: string | null;
  idempotency_key: string | null;
  content_hash: string;
  created_at: number;
  last_message_id: string | null;
}

/**
 * A session's scheduled messages (README "Schedules"). A firing moves a row on (or, for a message
 * delivered once, deletes it) in the transaction that puts its message in the inbox, so each
 * firing time is delivered once whatever restarts.
 */
export class Schedules {
  constructor(readonly sql: TableSql) {}

  add(row: ScheduleRow): void {
    this.sql.exec(
      `INSERT INTO schedules (schedule_id, cron, timezone, next_at, content, source, delivery, message_id,
         idempotency_key, content_hash, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      row.scheduleId,
      row.cron ?? null,
      row.timezone ?? null,
      row.nextAt,
      JSON.stringify(row.content),
      JSON.stringify(row.source),
      row.delivery,
      row.messageId ?? null,
      row.idempotencyKey ?? null,
      row.contentHash,
      row.createdAt,
    );
  }

  get(scheduleId: string): ScheduleRow | undefined {
    if (!this.sql.exists()) return undefined;
    const row = this.sql.exec<Row>("SELECT * FROM schedules WHERE schedule_id = ?", scheduleId).toArray()[0];
    return row && rowOf(row);
  }

  byIdempotencyKey(key: string): ScheduleRow | undefined {
    if (!this.sql.exists()) return undefined;
    const row = this.sql.exec<Row>("SELECT * FROM schedules WHERE idempotency_key = ?", key).toArray()[0];
    return row && rowOf(row);
  }

  /** Every row (recurring schedules and messages held for their time), oldest first. */
  all(): ScheduleRow[] {
    if (!this.sql.exists()) return [];
    return this.sql.exec<Row>("SELECT * FROM schedules ORDER BY created_at, rowid").toArray().map(rowOf);
  }

  /** How many rows there are (schedules and messages waiting for their time). */
  count(): number {
    if (!this.sql.exists()) return 0;
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM schedules").one().n;
  }

  /** The earliest firing time (none: nothing is scheduled). */
  nextDue(): number | undefined {
    if (!this.sql.exists()) return undefined;
    return (
      this.sql.exec<{ at: number | null }>("SELECT min(next_at) AS at FROM schedules").one().at ?? undefined
    );
  }

  /** Rows due at `now`, earliest first. */
  due(now: number, limit: number): ScheduleRow[] {
    if (!this.sql.exists()) return [];
    return this.sql
      .exec<Row>(
        "SELECT * FROM schedules WHERE next_at <= ? ORDER BY next_at, schedule_id LIMIT ?",
        now,
        limit,
      )
      .toArray()
      .map(rowOf);
  }

  /** A recurring schedule fired: its next time, and the message of this firing (if one was added). */
  movedOn(scheduleId: string, nextAt: number, messageId: string | undefined): void {
    this.sql.exec(
      "UPDATE schedules SET next_at = ?, last_message_id = coalesce(?, last_message_id) WHERE schedule_id = ?",
      nextAt,
      messageId ?? null,
      scheduleId,
    );
  }

  /** Removes one; true when it was there. */
  remove(scheduleId: string): boolean {
    if (!this.sql.exists()) return false;
    return (
      this.sql.exec("DELETE FROM schedules WHERE schedule_id = ? RETURNING schedule_id", scheduleId).toArray()
        .length > 0
    );
  }

  /** Removes every row; their ids. */
  removeAll(): string[] {
    if (!this.sql.exists()) return [];
    return this.sql
      .exec<{ schedule_id: string }>("DELETE FROM schedules RETURNING schedule_id")
      .toArray()
      .map((r) => r.schedule_id);
  }
}

function rowOf(row: Row): ScheduleRow {
  const out: ScheduleRow = {
    scheduleId: row.schedule_id,
    nextAt: row.next_at,
    content: JSON.parse(row.content) as WireContent,
    source: JSON.parse(row.source) as MessageSource,
    delivery: row.delivery as MessageDelivery,
    contentHash: row.content_hash,
    createdAt: row.created_at,
  };
  if (row.cron !== null) out.cron = row.cron;
  if (row.timezone !== null) out.timezone = row.timezone;
  if (row.message_id !== null) out.messageId = row.message_id;
  if (row.idempotency_key !== null) out.idempotencyKey = row.idempotency_key;
  if (row.last_message_id !== null) out.lastMessageId = row.last_message_id;
  return out;
}
