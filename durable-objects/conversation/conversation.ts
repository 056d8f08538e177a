import { fail, ok, type Outcome } from "../../src/contract/errors";
import type { SessionHeader, SessionView } from "../../src/contract/session";
import type { CreateSession, EventPage, EventTextRead, SendInput } from "../../src/contract/session-api";
import { isEventTextRead, MAX_TEXT_READ_SEQS } from "../../src/contract/session-api";
import { compact } from "../../src/core/compact";
import type { ProviderScope } from "../../src/contract/provider";
import { scopeOf } from "../../src/providers/provider-access";
import { admitUserMessage } from "./admission";
import { createSession } from "./creation";
import type { StopCause, Stoppable } from "../kernel/part";
import type { SessionSchedules } from "../schedules/schedules";
import type { SessionContext } from "../session/session-context";
import { sessionView } from "../session/session-view";
import type { Subscribers } from "../kernel/subscribers";

/**
 * A page of `GET …/events` holds at most this much event data past its first event (`next` goes
 * on from there): 500 rows of 512 KiB would not fit an object's 128 MB.
 */
const EVENTS_PAGE_BYTES = 4 * 1024 * 1024;

/** The longest an `events` read waits for the next event (a long poll answers within a minute). */
const MAX_EVENTS_WAIT_MS = 60_000;

/**
 * The conversation of a session as its callers hold it: its creation, its view, the messages it is
 * sent, its log read page by page, an interrupt and a compaction asked for.
 */
export class Conversation implements Stoppable {
  readonly name = "conversation";
  readonly #ctx: SessionContext;
  readonly #subscribers: Subscribers;
  readonly #schedules: SessionSchedules;

  constructor(ctx: SessionContext, subscribers: Subscribers, schedules: SessionSchedules) {
    this.#ctx = ctx;
    this.#subscribers = subscribers;
    this.#schedules = schedules;
  }

  create(input: CreateSession): Outcome<{ view: SessionView; replayed: boolean }> {
    const created = createSession(this.#ctx.stores, input);
    return created.ok
      ? ok({ view: sessionView(this.#ctx, created.value.header), replayed: created.value.replayed })
      : created;
  }

  view(header: SessionHeader): SessionView {
    return sessionView(this.#ctx, header);
  }

  /** The providers the session may start children through (its tenant, its `providers` option). */
  providerScope(header: SessionHeader): ProviderScope {
    return scopeOf(header);
  }

  /** A message into the inbox; one with a `notBefore` ahead waits with the schedules (a time past is delivered at once). */
  send(input: SendInput): Outcome<{ messageId: string }> {
    const { notBefore, ...message } = input;
    if (notBefore !== undefined && notBefore > Date.now())
      return this.#schedules.defer({
        content: message.content,
        at: notBefore,
        delivery: message.delivery ?? "next-turn",
        source: { kind: "user", ...compact({ trace: message.trace }) },
        by: "caller",
        ...compact({ idempotencyKey: message.idempotencyKey }),
      });
    return admitUserMessage(this.#ctx, message);
  }

  /**
   * A page of the log after `query.after`; with `waitMs`, an empty page waits (up to that long,
   * at most 60 s) for the next committed event first: a long poll.
   */
  async events(
    query: { after: number; limit: number; maxBytes?: number; text?: EventTextRead },
    waitMs = 0,
  ): Promise<Outcome<EventPage>> {
    const text = query.text;
    if (text !== undefined && !isEventTextRead(text))
      return fail(
        "INVALID_REQUEST",
        `text: { leave: true } or { only: [seq, …] } (at most ${MAX_TEXT_READ_SEQS})`,
      );
    await this.#subscribers.waitAfter(query.after, Math.min(Math.max(0, waitMs), MAX_EVENTS_WAIT_MS));
    const { log } = this.#ctx.stores;
    const maxBytes = Math.min(EVENTS_PAGE_BYTES, query.maxBytes ?? EVENTS_PAGE_BYTES);
    if (text !== undefined) return ok(log.textPageAfter(query.after, query.limit, maxBytes, text));
    return ok(log.pageAfter(query.after, query.limit, maxBytes));
  }

  interrupt(): Outcome<{ accepted: true }> {
    this.#ctx.turns.interrupt("user");
    this.#ctx.kick(); // foreground children of the aborted turn get their cancel
    return ok({ accepted: true });
  }

  /** The session is deleted: its open turn ends (its model call is aborted once that committed) and its queued messages are discarded. */
  onStop(_cause: StopCause, reason: string): (() => void) | undefined {
    const { stores, turns } = this.#ctx;
    const closed = stores.loop.get().openTurn !== null && turns.closeForInterrupt(reason);
    stores.inbox.discardPending(reason);
    return closed ? () => turns.abortInFlight(reason) : undefined;
  }

  /** A compaction of the model's view, written by the drive loop. */
  compact(): Outcome<{ accepted: true }> {
    const { stores } = this.#ctx;
    stores.transact(() => stores.compaction.request());
    this.#ctx.kick();
    return ok({ accepted: true });
  }
}
