import { toBlocks } from "../../src/contract/content";
import {
  type CreateSchedule,
  MAX_SCHEDULED_PER_SESSION,
  type MessageDelivery,
  type Schedule,
} from "../../src/contract/control";
import type { WireContent } from "../../src/contract/content";
import { fail, ok, type Outcome } from "../../src/contract/errors";
import type { MessageSource } from "../../src/contract/events";
import { newMessageId } from "../../src/contract/ids";
import { compact } from "../../src/core/compact";
import { cronLoaded, cronTimes, loadCron } from "../../src/core/cron";
import { fingerprint } from "../../src/core/hash";
import { quote } from "../../src/core/quote";
import type { ScheduleRow } from "../store/schedules";
import type { SessionStores } from "../store/session-stores";
import { INTERRUPT_DELIVERY_CAUSE, placement, replaceRunningTurn } from "../conversation/admission";
import type { SessionPart, StopCause } from "../kernel/part";
import type { SessionContext } from "../session/session-context";

/** Why a one-shot child's schedules ended (their `schedule/deleted` reason). */
const RUN_ENDED = "its one-shot run ended";

/** How many due rows one pass of the drive loop fires (the rest in the next pass). */
const FIRINGS_PER_PASS = 16;

/** Who made a schedule: a caller of the API (or RPC), or the session's own model. */
export type ScheduledBy = "caller" | "model";

/**
 * Messages a session receives later (README "Schedules"): a message sent with `notBefore`, the
 * model's `schedule_message`, and recurring schedules of a cron expression in a time zone. Each
 * is a row with its next firing time; the drive loop's alarm wakes the object for the earliest.
 * A firing puts its message in the inbox and moves its row on (or deletes it) in one
 * transaction, so each firing time is delivered exactly once across restarts; a lost alarm is
 * repaired like any owed work (drive-loop.ts), and the firing then happens once, late. A
 * recurring schedule's next time is the first after the firing, so periods missed while the
 * object could not run are delivered once, not once each; and a firing while the previous one's
 * message still waits in the inbox adds none (the waiting message stands for both).
 */
export class SessionSchedules implements SessionPart {
  readonly name = "schedules";
  readonly #ctx: SessionContext;

  constructor(ctx: SessionContext) {
    this.#ctx = ctx;
  }

  /**
   * A recurring schedule (`POST …/schedules`, the model's `schedule_message` with a cron). The
   * caller has loaded croner (`loadCron`: on a session's first cron, not at an isolate's start).
   */
  create(
    body: CreateSchedule,
    by: ScheduledBy,
    scheduleId = newScheduleId(),
  ): Outcome<{ scheduleId: string; next: number }> {
    const { stores } = this.#ctx;
    const timezone = body.timezone ?? "UTC";
    const now = Date.now();
    const times = cronTimes(body.cron, timezone, now);
    if (!times.ok) return times;
    const next = times.value.after(now)!;
    const content = toBlocks(body.content);
    return stores.transact(() => {
      const prior = stores.schedules.get(scheduleId);
      if (prior) return ok({ scheduleId, next: prior.nextAt }); // a re-run tool call
      const full = this.#ended() ?? this.#full();
      if (full) return full;
      stores.schedules.add({
        scheduleId,
        cron: body.cron.trim(),
        timezone,
        nextAt: next,
        content: body.content,
        source: { kind: "schedule", scheduleId, at: next },
        delivery: "next-turn",
        contentHash: fingerprint(JSON.stringify(content)),
        createdAt: now,
      });
      stores.log.append("schedule/created", { scheduleId, next, cron: body.cron.trim(), timezone, by });
      this.#ctx.kick(); // the alarm moves to the earliest firing
      return ok({ scheduleId, next });
    });
  }

  /**
   * A message delivered once at `at` (`notBefore`, or the model's `schedule_message` with a delay),
   * idempotent by its key like any message. Its id is answered now.
   */
  defer(input: {
    content: WireContent;
    at: number;
    delivery: MessageDelivery;
    source: MessageSource | "schedule";
    by: ScheduledBy;
    idempotencyKey?: string;
    scheduleId?: string;
  }): Outcome<{ messageId: string }> {
    const { stores } = this.#ctx;
    const content = toBlocks(input.content);
    const contentHash = fingerprint(
      JSON.stringify(input.delivery === "next-turn" ? content : { content, delivery: input.delivery }),
    );
    const scheduleId = input.scheduleId ?? newScheduleId();
    return stores.transact(() => {
      const key = input.idempotencyKey;
      const prior =
        (key === undefined ? undefined : stores.schedules.byIdempotencyKey(key)) ??
        stores.schedules.get(scheduleId);
      if (prior) {
        return prior.contentHash === contentHash
          ? ok({ messageId: prior.messageId! })
          : fail("IDEMPOTENCY_KEY_REUSED", "this idempotencyKey was already used with different content");
      }
      const delivered = key === undefined ? undefined : stores.inbox.byIdempotencyKey(key);
      if (delivered !== undefined) return ok({ messageId: delivered }); // already due and delivered
      const full = this.#ended() ?? this.#full();
      if (full) return full;
      const messageId = newMessageId();
      const source =
        input.source === "schedule" ? { kind: "schedule" as const, scheduleId, at: input.at } : input.source;
      stores.schedules.add({
        scheduleId,
        nextAt: input.at,
        content: input.content,
        source,
        delivery: input.delivery,
        messageId,
        contentHash,
        createdAt: Date.now(),
        ...compact({ idempotencyKey: key }),
      });
      stores.log.append("schedule/created", { scheduleId, next: input.at, messageId, by: input.by });
      this.#ctx.kick();
      return ok({ messageId });
    });
  }

  /** The recurring schedules and the messages held for their time, oldest first (`GET …/schedules`). */
  list(): Schedule[] {
    return this.#ctx.stores.schedules.all().map(listed);
  }

  /**
   * Deletes a recurring schedule, or a held message before its time (`DELETE …/schedules/:scheduleId`):
   * the message then never enters the inbox, and its place under MAX_SCHEDULED_PER_SESSION is free.
   */
  remove(scheduleId: string, reason: string): Outcome<void> {
    const { stores } = this.#ctx;
    const removed = stores.transact(() => {
      if (!stores.schedules.remove(scheduleId)) return false;
      stores.log.append("schedule/deleted", { scheduleId, reason });
      return true;
    });
    if (!removed) return fail("NOT_FOUND", `no schedule ${quote(scheduleId)}`);
    this.#ctx.kick(); // the alarm may move later
    return ok(undefined);
  }

  /** Inside a transaction: drops every schedule and waiting message (the session is deleted). */
  dropAll(reason: string): void {
    const { stores } = this.#ctx;
    for (const row of stores.schedules.removeAll())
      stores.log.append("schedule/deleted", { scheduleId: row, reason });
  }

  /**
   * Inside the transaction that writes a one-shot child's result: its schedules and held messages
   * end, and a firing's message that no turn has taken yet is discarded, so nothing of them runs
   * after the run (README "Schedules"). New ones are refused from then on (`#ended`).
   */
  endWithRun(): void {
    this.dropAll(RUN_ENDED);
    this.#ctx.stores.inbox.discardScheduled(RUN_ENDED);
  }

  nextDue(): number | undefined {
    return this.#ctx.stores.schedules.nextDue();
  }

  /** The session is deleted: every schedule and held message ends. */
  onStop(_cause: StopCause, reason: string): undefined {
    this.dropAll(reason);
    return undefined;
  }

  /** Fires what is due; true when it fired something (more may be due). */
  async step(): Promise<boolean> {
    const { stores } = this.#ctx;
    const now = Date.now();
    const due = stores.schedules.due(now, FIRINGS_PER_PASS);
    if (due.length === 0) return false;
    if (due.some((row) => row.cron !== undefined) && !cronLoaded()) {
      await loadCron();
      return true; // the drive loop goes round again and reads what is due anew
    }
    let interrupted = false;
    stores.transact(() => {
      for (const row of due) if (this.#fire(row, now)) interrupted = true;
    });
    if (interrupted) this.#ctx.turns.abortInFlight(INTERRUPT_DELIVERY_CAUSE);
    return true; // the drive loop goes round again: the step the message owes runs
  }

  /** Inside a transaction: one firing of `row`. True when it ended the running turn. */
  #fire(row: ScheduleRow, now: number): boolean {
    const { stores } = this.#ctx;
    const { steerCapacity: _unbounded, ...place } = placement(row.delivery); // accepted already
    if (row.cron === undefined) {
      stores.schedules.remove(row.scheduleId);
      const admitted = stores.inbox.admit({
        messageId: row.messageId!,
        ...place,
        waking: true,
        source: row.source,
        content: toBlocks(row.content),
        contentHash: row.contentHash,
        ...compact({ idempotencyKey: row.idempotencyKey }),
      });
      return this.#admitted(admitted.kind === "accepted", row.delivery);
    }
    const times = cronTimes(row.cron, row.timezone!, now);
    const next = times.ok ? times.value.after(Math.max(now, row.nextAt)) : undefined;
    // the previous firing's message still waits: it stands for this firing too
    const waiting = row.lastMessageId !== undefined && stores.inbox.isPending(row.lastMessageId);
    let messageId: string | undefined;
    if (!waiting) {
      messageId = newMessageId();
      const admitted = stores.inbox.admit({
        messageId,
        ...place,
        waking: true,
        source: { kind: "schedule", scheduleId: row.scheduleId, at: row.nextAt },
        content: toBlocks(row.content),
        contentHash: row.contentHash,
        idempotencyKey: `schedule:${row.scheduleId}:${row.nextAt}`,
      });
      if (admitted.kind !== "accepted") messageId = undefined;
      this.#admitted(messageId !== undefined, row.delivery);
    }
    if (next === undefined) {
      stores.schedules.remove(row.scheduleId);
      stores.log.append("schedule/deleted", {
        scheduleId: row.scheduleId,
        reason: "its cron has no later time",
      });
    } else stores.schedules.movedOn(row.scheduleId, next, messageId);
    return false;
  }

  /** After a firing's admission: a waking message unparks the loop; `interrupt` ends the running turn. */
  #admitted(accepted: boolean, delivery: MessageDelivery): boolean {
    if (!accepted) return false;
    const { stores } = this.#ctx;
    const interrupted = replaceRunningTurn(delivery, this.#ctx);
    stores.loop.set({ ...stores.loop.get(), parked: false });
    return interrupted;
  }

  /** A one-shot child whose run has ended keeps no schedules (its own ended with the run). */
  #ended(): Outcome<never> | undefined {
    const oneShot = this.#ctx.header()?.oneShot;
    if (!oneShot || !oneShotRunEnded(this.#ctx.stores, oneShot.runId)) return undefined;
    return fail(
      "NOT_RESUMABLE",
      "this one-shot child's run has ended: it takes no schedules or messages for later",
    );
  }

  #full(): Outcome<never> | undefined {
    if (this.#ctx.stores.schedules.count() < MAX_SCHEDULED_PER_SESSION) return undefined;
    return fail(
      "QUOTA_EXCEEDED",
      `this session already has ${MAX_SCHEDULED_PER_SESSION} schedules and scheduled messages (MAX_SCHEDULED_PER_SESSION); delete one first`,
    );
  }
}

function newScheduleId(): string {
  return `sch_${crypto.randomUUID()}`;
}

/** A row as `GET …/schedules` lists it. */
function listed(row: ScheduleRow): Schedule {
  const { scheduleId, nextAt: next, content } = row;
  return row.cron === undefined
    ? { scheduleId, kind: "message", next, content, messageId: row.messageId!, delivery: row.delivery }
    : { scheduleId, kind: "cron", cron: row.cron, timezone: row.timezone!, next, content };
}

/**
 * Whether the one-shot run `runId` of this child has ended: its one result is in the outbox
 * (one-shot-child.ts writes it, with id `result:<runId>`, in the transaction that ends the run).
 */
function oneShotRunEnded(stores: SessionStores, runId: string): boolean {
  return stores.outbox.has(`result:${runId}`);
}
