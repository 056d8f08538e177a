import type { HostSql } from "../host/port";
import { ReadMemo } from "./read-memo";
import type { ContentBlock } from "../../src/contract/content";
import type { InboxLane, MessageSource } from "../../src/contract/events";
import type { PendingItem } from "../../src/core/turn-plan";
import type { SessionHeader } from "../../src/contract/session";
import { markBelowMcpFace } from "./approvals";
import type { EventLog } from "./event-log";
import type { SingleRow } from "./single-row";

export interface Admission {
  messageId: string;
  lane: InboxLane;
  waking: boolean;
  source: MessageSource;
  content: ContentBlock[];
  idempotencyKey?: string;
  contentHash: string;
  /**
   * A caller's message (MAX_PENDING_MESSAGES): it is refused, nothing stored, when this many
   * items are pending already. None: a delivery the session must take (a child's report or
   * notice, a child's own first prompt), admitted whatever is pending.
   */
  capacity?: number;
  /**
   * A caller's steering message (`next-step`, MAX_PENDING_STEERS): refused, nothing stored, when
   * this many callers' steering messages wait for the running turn's next step already.
   */
  steerCapacity?: number;
  /** Ahead of every pending item (a message delivered as `interrupt` is the next turn). */
  first?: boolean;
}

export type AdmissionResult =
  | { kind: "accepted"; messageId: string }
  | { kind: "replayed"; messageId: string }
  | { kind: "conflict"; messageId: string }
  | { kind: "full"; pending: number }
  | { kind: "steers-full"; pending: number };

/** How many pending items one poll reads. */
const PENDING_LIMIT = 256;

/**
 * The inbox: the only turn queue, FIFO by position (a message delivered as `interrupt` takes a
 * position ahead of every other). Acceptance writes the row and its
 * `agent/inbox/inserted` event together (callers run it inside one transaction). The pending
 * poll's answer is kept across the inbox's own writes when the write tells what it becomes (an
 * admitted item joins its end, a claimed one leaves it), so a message's admission and its claim
 * ask SQLite nothing more about the queue.
 *
 * It also knows how many items are pending (for MAX_PENDING_MESSAGES): the known queue's length
 * while it is shorter than one poll, else a count asked once and then carried across the same
 * writes, so admitting a message below the quota asks SQLite nothing either.
 */
export class Inbox {
  /** Reads of the hot polls, until the next write of the table (read-memo.ts). */
  readonly memo = new ReadMemo();

  /** `header`: the session's, which a message from below an MCP face marks (`admit`). */
  constructor(
    readonly sql: HostSql,
    readonly log: EventLog,
    readonly header?: SingleRow<SessionHeader>,
  ) {}

  admit(item: Admission): AdmissionResult {
    const pending = this.memo.known<readonly PendingItem[]>("pending", []);
    const count = this.memo.known<number>("count", 0);
    this.memo.changed();
    // unchanged unless admitted below
    if (pending) this.memo.remember("pending", pending.value);
    if (count) this.memo.remember("count", count.value);
    if (item.idempotencyKey !== undefined) {
      const prior = this.sql
        .exec<{ message_id: string; content_hash: string }>(
          "SELECT message_id, content_hash FROM inbox WHERE idempotency_key = ?",
          item.idempotencyKey,
        )
        .toArray()[0];
      if (prior) {
        return prior.content_hash === item.contentHash
          ? { kind: "replayed", messageId: prior.message_id }
          : { kind: "conflict", messageId: prior.message_id };
      }
    }
    if (item.capacity !== undefined) {
      const now = this.pendingCount();
      if (now >= item.capacity) return { kind: "full", pending: now };
    }
    if (item.steerCapacity !== undefined) {
      const steers = this.pendingSteers();
      if (steers >= item.steerCapacity) return { kind: "steers-full", pending: steers };
    }
    // positions order the queue: last (after every row), or first (before every row)
    const position = item.first ? "coalesce(min(position), 1) - 1" : "coalesce(max(position), 0) + 1";
    this.sql.exec(
      `INSERT INTO inbox (message_id, position, lane, waking, source, content, state, idempotency_key, content_hash)
       SELECT ?, ${position}, ?, ?, ?, ?, 'pending', ?, ? FROM inbox`,
      item.messageId,
      item.lane,
      item.waking ? 1 : 0,
      JSON.stringify(item.source),
      JSON.stringify(item.content),
      item.idempotencyKey ?? null,
      item.contentHash,
    );
    // the known queue grows by the new item: at its end (if it fits the poll), or at its front
    // (the poll's last item may then fall out of it)
    this.memo.changed();
    const added = { messageId: item.messageId, lane: item.lane, waking: item.waking };
    if (pending && item.first)
      this.memo.remember("pending", [added, ...pending.value].slice(0, PENDING_LIMIT));
    else if (pending && pending.value.length < PENDING_LIMIT)
      this.memo.remember("pending", [...pending.value, added]);
    if (count) this.memo.remember("count", count.value + 1);
    // a message a call through an MCP face made, or a session below one sent: this session is
    // below the face from now on, whichever turn reads it (README "Approvals")
    if (item.source.mcpFace && this.header) markBelowMcpFace(this.header);
    this.log.append("agent/inbox/inserted", {
      messageId: item.messageId,
      lane: item.lane,
      waking: item.waking,
      source: item.source,
    });
    return { kind: "accepted", messageId: item.messageId };
  }

  byIdempotencyKey(key: string): string | undefined {
    return this.sql
      .exec<{ message_id: string }>("SELECT message_id FROM inbox WHERE idempotency_key = ?", key)
      .toArray()[0]?.message_id;
  }

  /** Whether `messageId` is still pending. */
  isPending(messageId: string): boolean {
    return (
      this.sql.exec("SELECT 1 FROM inbox WHERE message_id = ? AND state = 'pending'", messageId).toArray()
        .length > 0
    );
  }

  /** How many items are pending (claimed and discarded ones are not). */
  pendingCount(): number {
    const first = this.pending();
    if (first.length < PENDING_LIMIT) return first.length; // the whole queue
    return this.memo.read(
      "count",
      () => this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM inbox WHERE state = 'pending'").one().n,
      0,
    );
  }

  /** Callers' steering messages (`next-step` from a user or a parent) waiting for a step. */
  pendingSteers(): number {
    return this.sql
      .exec<{ n: number }>(
        `SELECT count(*) AS n FROM inbox WHERE state = 'pending' AND lane = 'next-step'
           AND json_extract(source, '$.kind') IN ('user', 'coordinator')`,
      )
      .one().n;
  }

  /** The first PENDING_LIMIT pending items, in queue order. */
  pending(): readonly PendingItem[] {
    return this.memo.read("pending", () => this.#pending(), []);
  }

  #pending(): PendingItem[] {
    return this.sql
      .exec<{ message_id: string; lane: string; waking: number }>(
        "SELECT message_id, lane, waking FROM inbox WHERE state = 'pending' ORDER BY position LIMIT ?",
        PENDING_LIMIT,
      )
      .toArray()
      .map((r) => ({ messageId: r.message_id, lane: r.lane as InboxLane, waking: r.waking === 1 }));
  }

  claim(messageId: string): { content: ContentBlock[]; source: MessageSource } | undefined {
    const pending = this.memo.known<readonly PendingItem[]>("pending", []);
    const count = this.memo.known<number>("count", 0);
    this.memo.changed();
    const row = this.sql
      .exec<{ content: string; source: string }>(
        "UPDATE inbox SET state = 'claimed' WHERE message_id = ? AND state = 'pending' RETURNING content, source",
        messageId,
      )
      .toArray()[0];
    // the claimed item leaves the known queue (a full poll's answer would let the next one in: asked again)
    if (pending && (pending.value.length < PENDING_LIMIT || !row))
      this.memo.remember(
        "pending",
        pending.value.filter((p) => p.messageId !== messageId),
      );
    if (count) this.memo.remember("count", row ? count.value - 1 : count.value);
    return row ? { content: JSON.parse(row.content), source: JSON.parse(row.source) } : undefined;
  }

  /**
   * Drops the pending messages that schedules' firings put in (source `schedule`); each gets its
   * `agent/inbox/discarded` event (a one-shot child's run ended: what its schedules sent runs no turn).
   */
  discardScheduled(reason: string): string[] {
    const ids = this.sql
      .exec<{ message_id: string }>(
        `UPDATE inbox SET state = 'discarded'
           WHERE state = 'pending' AND json_extract(source, '$.kind') = 'schedule' RETURNING message_id`,
      )
      .toArray()
      .map((r) => r.message_id);
    if (ids.length === 0) return ids;
    this.memo.changed();
    for (const messageId of ids) this.log.append("agent/inbox/discarded", { messageId, reason });
    return ids;
  }

  /** Drops every pending item (a drain); each gets its `agent/inbox/discarded` event. */
  discardPending(reason: string): string[] {
    this.memo.changed();
    const ids = this.sql
      .exec<{ message_id: string }>(
        "UPDATE inbox SET state = 'discarded' WHERE state = 'pending' RETURNING message_id",
      )
      .toArray()
      .map((r) => r.message_id);
    for (const messageId of ids) this.log.append("agent/inbox/discarded", { messageId, reason });
    this.memo.remember("pending", []);
    this.memo.remember("count", 0);
    return ids;
  }
}
