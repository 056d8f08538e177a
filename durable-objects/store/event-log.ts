import type { ContentBlock } from "../../src/contract/content";
import type { EventData, EventType, SessionEvent, ToolCall } from "../../src/contract/events";
import { CONVERSATION_EVENTS } from "../../src/contract/events";
import type { ConversationMessage } from "../../src/agent/model";
import { fitEvent } from "../../src/core/event-budget";

/**
 * The append-only event log: `seq` is contiguous from 0, rows are never updated or deleted.
 * Appended events are collected and handed to subscribers only after their transaction commits.
 */
export class EventLog {
  readonly #sql: SqlStorage;
  #nextSeq: number | undefined;
  #uncommitted: SessionEvent[] = [];

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /** The table was created just now: the first event gets seq 0 without asking. */
  startEmpty(): void {
    this.#nextSeq = 0;
  }

  nextSeq(): number {
    if (this.#nextSeq === undefined) {
      const row = this.#sql.exec<{ last: number | null }>("SELECT max(seq) AS last FROM events").one();
      this.#nextSeq = row.last === null ? 0 : row.last + 1;
    }
    return this.#nextSeq;
  }

  /** Appends one event; oversized text is cut to the row budget with a marker, never a storage error. */
  append<T extends EventType>(type: T, input: EventData[T]): number {
    const seq = this.nextSeq();
    const at = Date.now();
    const { data } = fitEvent(input);
    this.#sql.exec(
      "INSERT INTO events (seq, type, at, data) VALUES (?, ?, ?, ?)",
      seq,
      type,
      at,
      JSON.stringify(data),
    );
    this.#nextSeq = seq + 1;
    this.#uncommitted.push({ seq, type, at, data } as SessionEvent);
    return seq;
  }

  /** Appends already-formed events (a fork seed) keeping their types, times and data. */
  appendSeed(events: readonly Pick<SessionEvent, "type" | "at" | "data">[]): void {
    for (const e of events) {
      const seq = this.nextSeq();
      this.#sql.exec(
        "INSERT INTO events (seq, type, at, data) VALUES (?, ?, ?, ?)",
        seq,
        e.type,
        e.at,
        JSON.stringify(e.data),
      );
      this.#nextSeq = seq + 1;
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
  }

  page(after: number, limit: number): SessionEvent[] {
    return this.#sql
      .exec<{ seq: number; type: string; at: number; data: string }>(
        "SELECT seq, type, at, data FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
        after,
        limit,
      )
      .toArray()
      .map((r) => ({ seq: r.seq, type: r.type as EventType, at: r.at, data: JSON.parse(r.data) }));
  }

  /** Every event from `fromSeq` of the given types, in order. */
  ofTypes<T extends EventType>(types: readonly T[], fromSeq = 0): SessionEvent<T>[] {
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

  /** The newest event of a type at or after `fromSeq`. */
  last<T extends EventType>(type: T, fromSeq = 0): SessionEvent<T> | undefined {
    const row = this.#sql
      .exec<{ seq: number; at: number; data: string }>(
        "SELECT seq, at, data FROM events WHERE type = ? AND seq >= ? ORDER BY seq DESC LIMIT 1",
        type,
        fromSeq,
      )
      .toArray()[0];
    return row ? { seq: row.seq, type, at: row.at, data: JSON.parse(row.data) } : undefined;
  }

  conversation(fromSeq: number): ConversationMessage[] {
    return this.ofTypes(CONVERSATION_EVENTS, fromSeq).map(toMessage);
  }

  unansweredToolCalls(fromSeq: number): ToolCall[] {
    const assistant = this.last("assistant/message", fromSeq);
    const calls = assistant?.data.toolCalls ?? [];
    if (calls.length === 0) return [];
    const answered = new Set(this.ofTypes(["tool/result"], assistant!.seq + 1).map((e) => e.data.toolCallId));
    return calls.filter((c) => !answered.has(c.id));
  }
}

function toMessage(e: SessionEvent<(typeof CONVERSATION_EVENTS)[number]>): ConversationMessage {
  if (e.type === "user/message") {
    const d = e.data as EventData["user/message"];
    return { role: "user", content: d.content, source: d.source };
  }
  if (e.type === "assistant/message") {
    const d = e.data as EventData["assistant/message"];
    return { role: "assistant", content: d.content, toolCalls: d.toolCalls ?? [] };
  }
  const d = e.data as EventData["tool/result"];
  return {
    role: "tool",
    toolCallId: d.toolCallId,
    name: d.name,
    content: d.content as ContentBlock[],
    isError: d.isError,
  };
}
