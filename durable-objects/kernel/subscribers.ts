import type { SessionEvent } from "../../src/contract/events";
import { fail } from "../../src/contract/errors";
import { failure } from "../../src/contract/respond";
import {
  KEEPALIVE_PING,
  KEEPALIVE_PONG,
  offersStreamProtocol,
  STREAM_PROTOCOL,
} from "../../src/contract/stream";
import type { HostSockets } from "../host/port";
import type { EventLog } from "../store/event-log";
import { SocketSubscribers } from "./socket-subscribers";
import { SseSubscribers } from "./sse-subscribers";

export { REPLAY_CONTINUES } from "./socket-subscribers";

/**
 * Live event streams: Server-Sent Events held in memory (sse-subscribers.ts), and hibernatable
 * WebSockets whose attachment remembers the last seq each was sent (socket-subscribers.ts), so a
 * replay followed by live pushes never skips or repeats an event, also after the object
 * hibernated or was evicted and woke again; and the long polls of `events` reads.
 *
 * A replay never buffers the log for a reader that does not read (README, Security and limits:
 * "Streams"): SSE pulls the log a page at a time as its reader reads; a WebSocket carries one
 * window of replay per connection, then closes with REPLAY_CONTINUES and the client resumes.
 * Subscribers (both kinds, hibernated sockets included) are capped per session: past the cap a
 * new one is `429 TOO_MANY_SUBSCRIBERS` before anything is replayed. On a host that keeps no
 * sockets (host/port.ts), a WebSocket request is `422 UNSUPPORTED_CAPABILITY` and SSE is served.
 */

/**
 * A live text delta of a model step while it streams: sent only to subscribers that asked for
 * them, never logged and without a `seq` (the step's `assistant/message` is the durable record).
 * A step retried after a failure starts its text over with the next `attempt`.
 */
export interface TextDelta {
  type: "assistant/delta";
  turn: number;
  step: number;
  attempt: number;
  text: string;
}

/** Subscribers per session when `MAX_SUBSCRIBERS_PER_SESSION` is unset or not a positive integer. */
export const DEFAULT_MAX_SUBSCRIBERS = 32;

/** The subscriber cap from the `MAX_SUBSCRIBERS_PER_SESSION` var (default 32). */
export function subscriberCap(value: string | undefined): number {
  const cap = Number(value);
  return value !== undefined && value.trim() !== "" && Number.isSafeInteger(cap) && cap > 0
    ? cap
    : DEFAULT_MAX_SUBSCRIBERS;
}

export class Subscribers {
  /** SSE subscribers live in memory only (they keep the object awake while they are open). */
  readonly #sse: SseSubscribers;
  /** The host's WebSockets (none on a host without them). */
  readonly #sockets: SocketSubscribers | undefined;
  /** Long-poll readers waiting for the next committed event (memory only, each bounded in time). */
  readonly #waiters = new Set<() => void>();

  /** `sockets`: the host's WebSockets (absent: a host without them, SSE only). */
  constructor(
    readonly sockets: HostSockets | undefined,
    readonly log: EventLog,
  ) {
    this.#sse = new SseSubscribers(log);
    this.#sockets = sockets && new SocketSubscribers(sockets, log);
    // a client's keepalive `ping` is answered `pong` by the host itself: an idle stream behind a
    // proxy stays open, and the object is neither woken nor kept from hibernating
    sockets?.keepalive(KEEPALIVE_PING, KEEPALIVE_PONG);
  }

  /** The session was deleted: every stream ends (WebSockets with 4404, SSE responses close). */
  closeAll(): void {
    this.#sockets?.closeAll();
    this.#sse.closeAll();
    for (const wake of [...this.#waiters]) wake();
  }

  /** Open subscribers: SSE responses and WebSockets (hibernated ones included) not yet closed. */
  subscribers(): number {
    return this.#sse.size + (this.#sockets?.open().length ?? 0);
  }

  /**
   * A forwarded stream request: `?transport=sse` opens Server-Sent Events, anything else a
   * WebSocket (answering the stream subprotocol when the client offers it); `after` is the last
   * seq the reader has (clamped to the log's end: a cursor past it would silently skip the events
   * that fill the gap), `deltas=true` adds live text deltas.
   */
  serve(request: Request, query: URLSearchParams, cap: number): Response {
    const after = Math.min(Number(query.get("after") ?? "-1"), this.log.nextSeq() - 1);
    const deltas = query.get("deltas") === "true";
    if (query.get("transport") === "sse") return this.openSse(after, deltas, cap);
    const offered = offersStreamProtocol(request.headers.get("sec-websocket-protocol"));
    return this.open(after, offered ? STREAM_PROTOCOL : undefined, deltas, cap);
  }

  /** The `429` for a subscriber past `cap`, or undefined when it may open. */
  #refuse(cap: number): Response | undefined {
    if (this.subscribers() < cap) return undefined;
    return failure(
      fail("TOO_MANY_SUBSCRIBERS", `this session already has ${cap} stream subscribers; try again later`),
    );
  }

  /** Opens a Server-Sent Events stream replaying from `after`, then live (sse-subscribers.ts). */
  openSse(after: number, deltas: boolean, cap: number): Response {
    const refused = this.#refuse(cap);
    if (refused) return refused;
    return this.#sse.open(after, deltas);
  }

  /**
   * Opens a socket replaying from `after`; `protocol` is the subprotocol to answer, if any;
   * `deltas` subscribes it to live text deltas too. A replay longer than one window sends the
   * window and closes with REPLAY_CONTINUES. A host without sockets answers `422` (SSE serves).
   */
  open(after: number, protocol: string | undefined, deltas: boolean, cap: number): Response {
    if (!this.#sockets)
      return failure(
        fail(
          "UNSUPPORTED_CAPABILITY",
          "this host keeps no WebSockets: open the event stream as Server-Sent Events (Accept: text/event-stream)",
        ),
      );
    const refused = this.#refuse(cap);
    if (refused) return refused;
    return this.#sockets.accept(after, protocol, deltas);
  }

  /**
   * Resolves once an event after `seq` is committed, or after `waitMs` (whichever comes first):
   * the long poll of `events` reads. Resolves at once when the log is already past `seq`.
   */
  waitAfter(seq: number, waitMs: number): Promise<void> {
    if (waitMs <= 0 || this.log.nextSeq() - 1 > seq) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, waitMs);
      this.#waiters.add(wake);
    });
  }

  /**
   * Committed events reach every subscriber: SSE readers with room take them from the log now
   * (the others when they read), sockets get them pushed. A failing one never affects the others.
   */
  publish(events: readonly SessionEvent[]): void {
    if (events.length === 0) return;
    for (const wake of [...this.#waiters]) wake();
    this.#sse.publish();
    this.#sockets?.publish(events);
  }

  /**
   * A model step's live text (the turn driver's `live` port), to the subscribers that asked for
   * deltas; best effort, nothing is stored.
   */
  delta(text: Omit<TextDelta, "type">): void {
    const delta: TextDelta = { type: "assistant/delta", ...text };
    let message: string | undefined;
    const json = () => {
      message ??= JSON.stringify(delta);
      return message;
    };
    this.#sse.delta(json);
    this.#sockets?.delta(json);
  }
}
