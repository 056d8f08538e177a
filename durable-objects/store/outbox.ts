import type { HostSql } from "../host/port";
import { ReadMemo } from "./read-memo";
import type { Envelope } from "../../src/contract/envelope";
import type { OutboxEntry } from "../../src/contract/session-api";
import type { EventLog } from "./event-log";

/**
 * The transactional outbox: every message to another session is written in the same
 * transaction as the event that caused it and delivered by the driver with backoff. Rows for one
 * target go out in order (a failure holds the rest of that link back). After MAX_ATTEMPTS a row
 * is dead-lettered, visibly: an `outbox/dead-letter` event and the row kept with `dead_at`.
 *
 * Sends are counted before they go out (`sends`), so a restart during a send counts as a failed
 * attempt and an object that crashes during every send dead-letters the row instead of looping.
 * The first send of a row costs no write of its own: it is claimed in the transaction that
 * enqueued it, for the instance that enqueued it (a restarted instance sees the claim unfinished).
 */

export const MAX_ATTEMPTS = 10;
const BASE_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 60_000;

/** How many live rows one pass of the drive loop looks at. */
const LIVE_LIMIT = 64;

/** A live row as the drive loop's poll reads it: with the time its next send is due. */
type LiveRow = OutboxRow & { nextAt: number };

/**
 * What the next enqueue needs: the last position and each link's row count. Rows are never
 * deleted, so only an enqueue changes it; known from a brand-new outbox on (read-memo.ts).
 */
interface Tail {
  position: number;
  links: Map<string, number>;
}

/**
 * Answers kept across the outbox's own writes, with what each is for an empty outbox: `tail`
 * (only an enqueue moves it, and says how) and `gap-free` (no row is dead or withdrawn: only a
 * dead letter or a withdrawal ends it).
 */
const KEPT = { tail: (): Tail => ({ position: 0, links: new Map() }), "gap-free": (): boolean => true };
type Kept = keyof typeof KEPT;

export interface OutboxRow {
  id: string;
  /** The row's place in the outbox (rows of one link go out in this order). */
  position: number;
  target: string;
  envelope: Envelope;
  /** Sends that finished and failed. */
  attempts: number;
  /** Sends begun (one more than `attempts` while one is out, or was when the object restarted). */
  sends: number;
}

/** The error recorded for a send that never finished because the object restarted during it. */
export const RESTARTED_DURING_SEND = "the session restarted during the send";

export function backoffMs(attempts: number, overloaded: boolean): number {
  const base = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** Math.max(0, attempts - 1));
  return overloaded ? Math.min(MAX_BACKOFF_MS * 4, base * 4) : base;
}

export class Outbox {
  /** Rows whose first send this instance claimed when it enqueued them (memory only). */
  readonly #claimedHere = new Set<string>();

  /** Reads of the drive loop's polls, until the next write of the outbox (read-memo.ts). */
  readonly memo = new ReadMemo();

  constructor(
    readonly sql: HostSql,
    readonly log: EventLog,
  ) {}

  /** Enqueues once per envelope id: a second enqueue of the same id changes nothing (the insert's conflict clause). */
  enqueue(envelope: Envelope, now = Date.now()): boolean {
    // what the drive loop's polls knew before: the new row joins their answers (it is live, due
    // now and last in order), so the pass after the enqueue asks nothing
    const live = this.memo.known<readonly LiveRow[]>(`live:${LIVE_LIMIT}`, []);
    const due = this.memo.known<number | undefined>("nextDue", undefined);
    this.#changed(["gap-free", "tail"]);
    const tail = this.#known("tail"); // after #changed: the answer the memo keeps, moved below
    // the next position, and the per-link sequence: the receiver applies a link's envelopes in this
    // order, whatever the network does
    const { position, linkSeq } = tail
      ? { position: tail.position + 1, linkSeq: (tail.links.get(envelope.to) ?? 0) + 1 }
      : this.sql
          .exec<{ position: number; linkSeq: number }>(
            `SELECT coalesce(max(position), 0) + 1 AS position,
           (SELECT count(*) FROM outbox WHERE target = ?) + 1 AS linkSeq FROM outbox`,
            envelope.to,
          )
          .one();
    const payload = JSON.stringify({ ...envelope, linkSeq });
    const inserted = this.sql
      .exec(
        `INSERT INTO outbox (id, position, target, kind, payload, next_at, sends) VALUES (?, ?, ?, ?, ?, ?, 1)
         ON CONFLICT (id) DO NOTHING RETURNING id`,
        envelope.id,
        position,
        envelope.to,
        envelope.kind,
        payload,
        now,
      )
      .toArray();
    if (inserted.length === 0) return false;
    if (tail) {
      // the memo's own answer, read only here: it moves with the row just written
      tail.position = position;
      tail.links.set(envelope.to, linkSeq);
    }
    this.#claimedHere.add(envelope.id);
    const row: LiveRow = {
      id: envelope.id,
      position,
      target: envelope.to,
      envelope: JSON.parse(payload) as Envelope,
      attempts: 0,
      sends: 1,
      nextAt: now,
    };
    if (live && live.value.length < LIVE_LIMIT)
      this.memo.remember(`live:${LIVE_LIMIT}`, [...live.value, row]);
    if (due) this.memo.remember("nextDue", Math.min(due.value ?? now, now));
    return true;
  }

  /** A kept answer (KEPT), if known. */
  #known<K extends Kept>(key: K): ReturnType<(typeof KEPT)[K]> | undefined {
    return this.memo.known<ReturnType<(typeof KEPT)[K]> | undefined>(
      key,
      KEPT[key]() as ReturnType<(typeof KEPT)[K]>,
    )?.value;
  }

  /** A write of the outbox: the memo forgets what it read, except the kept answers the write leaves true. */
  #changed(keep: readonly Kept[] = []): void {
    const kept = keep.map((key) => [key, this.#known(key)] as const);
    this.memo.changed();
    for (const [key, value] of kept) if (value !== undefined) this.memo.remember(key, value);
  }

  /** Whether this instance claimed the row's next send already (its first, when it enqueued it). */
  sendClaimed(row: OutboxRow): boolean {
    return row.sends === row.attempts + 1 && this.#claimedHere.has(row.id);
  }

  /**
   * Inside a transaction, before a send this instance did not claim: a send begun earlier that
   * never finished (the object restarted during it) counts as a failed attempt first, which backs
   * the row off or dead-letters it (false: do not send now); otherwise the send is claimed (true).
   */
  claimSend(row: OutboxRow, now = Date.now()): boolean {
    this.#changed(["gap-free", "tail"]);
    this.#claimedHere.delete(row.id);
    if (row.sends > row.attempts) {
      this.markFailed({ ...row, attempts: row.sends - 1 }, RESTARTED_DURING_SEND, false, now);
      return false;
    }
    this.sql.exec("UPDATE outbox SET sends = ? WHERE id = ?", row.sends + 1, row.id);
    return true;
  }

  has(id: string): boolean {
    return this.sql.exec("SELECT 1 FROM outbox WHERE id = ?", id).toArray().length > 0;
  }

  /** Undelivered, live rows due now, in order, at most one blocked link's worth skipped. */
  due(now: number, limit = LIVE_LIMIT): OutboxRow[] {
    const rows = this.#live(limit);
    return rows
      .filter((r, i) => {
        // per-link order: a row waits while an earlier row of the same target is not yet due
        const earlier = rows.slice(0, i).some((o) => o.target === r.target && o.nextAt > now);
        return r.nextAt <= now && !earlier;
      })
      .map(({ nextAt: _nextAt, ...row }) => row);
  }

  /** The first `limit` undelivered, live rows in order (kept until the outbox's next write). */
  #live(limit: number): readonly LiveRow[] {
    return this.memo.read(
      `live:${limit}`,
      () =>
        this.sql
          .exec<{
            id: string;
            position: number;
            target: string;
            payload: string;
            attempts: number;
            sends: number;
            next_at: number;
          }>(
            `SELECT id, position, target, payload, attempts, sends, next_at FROM outbox
           WHERE delivered_at IS NULL AND dead_at IS NULL ORDER BY position LIMIT ?`,
            limit,
          )
          .toArray()
          .map((r) => ({
            id: r.id,
            position: r.position,
            target: r.target,
            envelope: JSON.parse(r.payload) as Envelope,
            attempts: r.attempts,
            sends: r.sends,
            nextAt: r.next_at,
          })),
      [],
    );
  }

  /**
   * The `after` of a row about to be sent: undefined while every earlier row of its link was
   * delivered (the receiver needs no help), else the last delivered position below it (0: none).
   * Sending is in order per link, so every earlier row is delivered, dead or withdrawn by now.
   */
  gapBelow(row: OutboxRow): number | undefined {
    if (this.#known("gap-free") === true) return undefined; // no row is dead or withdrawn
    const { position } = row;
    const gap = this.sql
      .exec(
        `SELECT 1 FROM outbox WHERE target = ? AND position < ?
           AND (dead_at IS NOT NULL OR withdrawn = 1) LIMIT 1`,
        row.target,
        position,
      )
      .toArray();
    if (gap.length === 0) return undefined;
    const last = this.sql
      .exec<{ seq: number | null }>(
        `SELECT max(json_extract(payload, '$.linkSeq')) AS seq FROM outbox
         WHERE target = ? AND position < ? AND delivered_at IS NOT NULL AND withdrawn = 0`,
        row.target,
        position,
      )
      .one();
    return last.seq ?? 0;
  }

  /** A row that will never be sent (its run was disposed before its target existed). */
  withdraw(id: string, now = Date.now()): void {
    this.#changed(["tail"]);
    this.sql.exec(
      "UPDATE outbox SET delivered_at = ?, withdrawn = 1, last_error = NULL WHERE id = ? AND delivered_at IS NULL",
      now,
      id,
    );
  }

  /**
   * Withdraws every row to `target` not delivered yet but those of the `kept` kinds (a deleted
   * session owes that target nothing more, or only those).
   */
  withdrawAllTo(target: string, kept: readonly Envelope["kind"][] = [], now = Date.now()): void {
    this.#changed(["tail"]);
    this.sql.exec(
      `UPDATE outbox SET delivered_at = ?, withdrawn = 1, last_error = NULL
         WHERE target = ? AND delivered_at IS NULL AND kind NOT IN (SELECT value FROM json_each(?))`,
      now,
      target,
      JSON.stringify(kept),
    );
  }

  markDelivered(id: string, now = Date.now()): void {
    const live = this.memo.known<readonly LiveRow[]>(`live:${LIVE_LIMIT}`, []);
    this.#changed(["gap-free", "tail"]);
    this.#claimedHere.delete(id);
    this.sql.exec("UPDATE outbox SET delivered_at = ?, last_error = NULL WHERE id = ?", now, id);
    // a known poll that held every live row (fewer than its limit) still does, less this one:
    // the pass after a send asks nothing either
    if (live && live.value.length < LIVE_LIMIT) {
      const rest = live.value.filter((row) => row.id !== id);
      this.memo.remember(`live:${LIVE_LIMIT}`, rest);
      this.memo.remember(
        "nextDue",
        rest.length === 0 ? undefined : Math.min(...rest.map((row) => row.nextAt)),
      );
    }
  }

  /** Makes an undelivered row due now (its target just came into existence). */
  retryNow(id: string, now = Date.now()): void {
    this.#changed(["gap-free", "tail"]);
    this.sql.exec(
      "UPDATE outbox SET next_at = ? WHERE id = ? AND delivered_at IS NULL AND dead_at IS NULL",
      now,
      id,
    );
  }

  markFailed(row: OutboxRow, error: string, overloaded: boolean, now = Date.now()): void {
    const attempts = row.attempts + 1;
    this.#changed(attempts >= MAX_ATTEMPTS ? ["tail"] : ["gap-free", "tail"]);
    this.#claimedHere.delete(row.id);
    if (attempts >= MAX_ATTEMPTS) {
      this.sql.exec(
        "UPDATE outbox SET attempts = ?, sends = ?, dead_at = ?, last_error = ? WHERE id = ?",
        attempts,
        attempts,
        now,
        error,
        row.id,
      );
      this.log.append("outbox/dead-letter", {
        outboxId: row.id,
        target: row.target,
        kind: row.envelope.kind,
        attempts,
        error,
      });
      return;
    }
    this.sql.exec(
      "UPDATE outbox SET attempts = ?, sends = ?, next_at = ?, last_error = ? WHERE id = ?",
      attempts,
      attempts,
      now + backoffMs(attempts, overloaded),
      error,
      row.id,
    );
  }

  /** When the earliest undelivered live row is due, if any. */
  nextDue(): number | undefined {
    return this.memo.read("nextDue", () => this.#nextDue(), undefined);
  }

  #nextDue(): number | undefined {
    const row = this.sql
      .exec<{ at: number | null }>(
        "SELECT min(next_at) AS at FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL",
      )
      .one();
    return row.at ?? undefined;
  }

  /** Every row with its delivery state, newest first (for `GET /v1/sessions/:id/outbox`). */
  list(limit = 200): OutboxEntry[] {
    return this.sql
      .exec<{
        id: string;
        target: string;
        kind: string;
        attempts: number;
        last_error: string | null;
        delivered_at: number | null;
        dead_at: number | null;
      }>(
        "SELECT id, target, kind, attempts, last_error, delivered_at, dead_at FROM outbox ORDER BY position DESC LIMIT ?",
        limit,
      )
      .toArray()
      .map((r) => ({
        id: r.id,
        target: r.target,
        kind: r.kind,
        attempts: r.attempts,
        state: r.dead_at !== null ? "dead" : r.delivered_at !== null ? "delivered" : "pending",
        ...(r.last_error === null ? {} : { lastError: r.last_error }),
      }));
  }
}
