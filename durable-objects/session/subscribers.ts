import type { SessionEvent } from "../../src/contract/events";
import { fail } from "../../src/contract/errors";
import { failure } from "../../src/contract/respond";
import {
  KEEPALIVE_PING,
  KEEPALIVE_PONG,
  offersStreamProtocol,
  STREAM_PROTOCOL,
} from "../../src/contract/stream";
import type { EventLog } from "../store/event-log";

/**
 * Live event streams: Server-Sent Events held in memory, and hibernatable WebSockets whose
 * attachment remembers the last seq each was sent, so a replay followed by live pushes never
 * skips or repeats an event, also after the object hibernated or was evicted and woke again.
 *
 * A replay never buffers the log for a reader that does not read (README, Security and limits: "Streams"):
 * - SSE is a pull stream: the log is read a page at a time from SQLite only when the response's
 *   reader has taken what was queued (one chunk of at most 16 KiB ahead of it). Live events are
 *   read from the log the same way, so an idle reader holds one page whatever the session writes.
 * - A WebSocket in workerd has no `bufferedAmount` and no drain event: `send()` queues without
 *   bound and nothing tells the object whether the peer reads. So one connection carries at most
 *   WS_REPLAY_WINDOW_BYTES of replay; a longer replay then closes the socket with
 *   REPLAY_CONTINUES, and the client reconnects with `?after=<its last seq>` for the next window
 *   (the SDK does so on any close). The close frame comes after the window, so only a reader that
 *   read the whole window sees it; one that does not read holds one window and one slot.
 * Subscribers (both kinds, hibernated sockets included) are capped per session: past the cap a
 * new one is `429 TOO_MANY_SUBSCRIBERS` before anything is replayed.
 */

interface Attachment {
  lastSeq: number;
  /** The subscriber asked for live text deltas (`?deltas=true`). */
  deltas?: boolean;
  /** Closed with REPLAY_CONTINUES: gets nothing more, the client resumes on a new socket. */
  resuming?: boolean;
}

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
/** The WebSocket close code that ends one window of a longer replay: reconnect with `?after=`. */
export const REPLAY_CONTINUES = 4008;

/** Events per page read from the log (and the byte budget below, whichever is reached first). */
const REPLAY_PAGE = 500;
/** Bytes of event data per page read from the log; a page always holds at least one event. */
const PAGE_BYTES = 64 * 1024;
/**
 * An SSE response's queue counts bytes and takes a chunk only while it is empty: one chunk ahead
 * of its reader (a queue of several would also reach the reader as one read).
 */
const ONE_CHUNK_AHEAD: QueuingStrategy<Uint8Array> = { highWaterMark: 1, size: (chunk) => chunk.byteLength };
/** A page goes out in chunks of at most this many bytes, so one queued or in flight stays small. */
const SSE_CHUNK_BYTES = 16 * 1024;
/** Bytes of deltas (and the events before them) an SSE queue may hold for a reader that lags. */
const SSE_DELTA_SLACK_BYTES = 256 * 1024;
/** Bytes of replay one WebSocket connection carries before it closes with REPLAY_CONTINUES. */
const WS_REPLAY_WINDOW_BYTES = 1024 * 1024;
/** A comment line this often keeps proxies from closing an idle SSE stream. */
const SSE_HEARTBEAT_MS = 25_000;

/** The subscriber cap from the `MAX_SUBSCRIBERS_PER_SESSION` var (default 32). */
export function subscriberCap(value: string | undefined): number {
  const cap = Number(value);
  return value !== undefined && value.trim() !== "" && Number.isSafeInteger(cap) && cap > 0
    ? cap
    : DEFAULT_MAX_SUBSCRIBERS;
}

/** An open Server-Sent Events subscriber: where it is in the log, and its response's queue. */
interface SseSubscriber {
  lastSeq: number;
  deltas: boolean;
  controller: ReadableStreamDefaultController<Uint8Array>;
  /** Text to send before the next page (the opening comment), empty once sent. */
  prefix: string;
  /** The bytes of the page being sent that are not queued yet. */
  pending: Uint8Array;
  /** True while its queue is being filled (an enqueue may call `pull` back synchronously). */
  filling: boolean;
  drop(): void;
}

const encoder = new TextEncoder();

/** A log event read for a replay: its seq and type, and its JSON as sent. */
interface WireEvent {
  seq: number;
  type: string;
  json: string;
}

/** One log event as an SSE event: its seq as the id (for `Last-Event-ID`), its type as the name. */
function sseEvent(event: WireEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${event.json}\n\n`;
}

export class Subscribers {
  /** SSE subscribers live in memory only (they keep the object awake while they are open). */
  readonly #sse = new Set<SseSubscriber>();
  /** Long-poll readers waiting for the next committed event (memory only, each bounded in time). */
  readonly #waiters = new Set<() => void>();

  constructor(
    readonly ctx: DurableObjectState,
    readonly log: EventLog,
  ) {
    // a client's keepalive `ping` is answered `pong` by the platform itself: an idle stream
    // behind a proxy stays open, and the object is neither woken nor kept from hibernating
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(KEEPALIVE_PING, KEEPALIVE_PONG));
  }

  /** The session was deleted: every stream ends (WebSockets with 4404, SSE responses close). */
  closeAll(): void {
    for (const socket of this.ctx.getWebSockets()) {
      try {
        socket.close(4404, "the session was deleted");
      } catch {
        // already closing
      }
    }
    for (const subscriber of [...this.#sse]) {
      subscriber.drop();
      try {
        subscriber.controller.close();
      } catch {
        // the reader went away first
      }
    }
    for (const wake of [...this.#waiters]) wake();
  }

  /** Open subscribers: SSE responses and WebSockets (hibernated ones included) not yet closed. */
  subscribers(): number {
    return this.#sse.size + this.ctx.getWebSockets().length;
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

  /**
   * Opens a Server-Sent Events stream replaying from `after`, then live: each event as
   * `id: <seq>` / `event: <type>` / `data: <event JSON>`, a comment line every 25 s, and with
   * `deltas` also `event: assistant/delta` messages (no id). The first page is read now, the
   * rest of the log (live events included) only as the reader takes what is queued. A reader
   * that went away (the response was cancelled) frees its slot; it reconnects with
   * `Last-Event-ID` and loses nothing.
   */
  openSse(after: number, deltas: boolean, cap: number): Response {
    const refused = this.#refuse(cap);
    if (refused) return refused;
    let heartbeat: ReturnType<typeof setInterval> | undefined;
    let subscriber: SseSubscriber | undefined;
    const readable = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          const sub: SseSubscriber = {
            lastSeq: after,
            deltas,
            controller,
            prefix: ": stream open\n\n",
            pending: new Uint8Array(0),
            filling: false,
            drop: () => {
              if (this.#sse.delete(sub) && heartbeat !== undefined) clearInterval(heartbeat);
            },
          };
          subscriber = sub;
          this.#sse.add(sub);
          heartbeat = setInterval(() => this.#offer(sub, ": keepalive\n\n", 0), SSE_HEARTBEAT_MS);
        },
        pull: () => {
          if (subscriber) this.#fill(subscriber, 0);
        },
        cancel: () => subscriber?.drop(),
      },
      ONE_CHUNK_AHEAD,
    );
    // `start` ran in the constructor: the opening comment and the first page go out as the log is now
    if (subscriber) this.#fill(subscriber, 0);
    return new Response(readable, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        "x-accel-buffering": "no",
      },
    });
  }

  /**
   * Queues log pages for `subscriber` up to the end of the log while its queue holds fewer than
   * `slack` bytes (0: only into an empty queue, one chunk ahead of the reader).
   */
  #fill(subscriber: SseSubscriber, slack: number): void {
    if (subscriber.filling) return;
    subscriber.filling = true;
    try {
      const { controller } = subscriber;
      const end = this.log.nextSeq() - 1;
      while ((controller.desiredSize ?? 0) > -slack) {
        if (subscriber.pending.byteLength === 0) {
          const page = subscriber.lastSeq < end ? this.#page(subscriber.lastSeq, end) : [];
          if (page.length === 0 && !subscriber.prefix) return;
          if (page.length > 0) subscriber.lastSeq = page[page.length - 1]!.seq;
          subscriber.pending = encoder.encode(subscriber.prefix + page.map(sseEvent).join(""));
          subscriber.prefix = "";
        }
        // the position and the rest move before the enqueue: an enqueue may call `pull` back at once
        const chunk = subscriber.pending.subarray(0, SSE_CHUNK_BYTES);
        subscriber.pending = subscriber.pending.subarray(chunk.byteLength);
        controller.enqueue(chunk);
      }
    } catch {
      subscriber.drop(); // the response is gone
    } finally {
      subscriber.filling = false;
    }
  }

  /**
   * Queues a message that is not a log event (a keepalive, a delta) once `subscriber` caught up
   * with the log (so it never overtakes an event), while its queue holds fewer than `slack`
   * bytes; otherwise the message is dropped (best effort).
   */
  #offer(subscriber: SseSubscriber, text: string, slack: number): void {
    this.#fill(subscriber, slack);
    try {
      const behind = subscriber.lastSeq < this.log.nextSeq() - 1;
      if (behind || subscriber.prefix || subscriber.pending.byteLength > 0) return;
      if ((subscriber.controller.desiredSize ?? 0) <= -slack) return;
      subscriber.controller.enqueue(encoder.encode(text));
    } catch {
      subscriber.drop();
    }
  }

  /**
   * The events after `after` up to `upTo` as their wire JSON: at most REPLAY_PAGE of them and,
   * past the first, no more than PAGE_BYTES of data (the log's `storedPage`: sizes first, so a
   * page of large events is never read whole only to be cut); the rows' stored JSON goes out as it is (it is `JSON.stringify` of the data, so this is the text
   * `JSON.stringify(event)` gives), never parsed only to be serialized again.
   */
  #page(after: number, upTo: number): WireEvent[] {
    return this.log.storedPage(after, REPLAY_PAGE, { maxBytes: PAGE_BYTES, upTo }).map((r) => ({
      seq: r.seq,
      type: r.type,
      json: `{"seq":${r.seq},"type":${JSON.stringify(r.type)},"at":${r.at},"data":${r.json}}`,
    }));
  }

  /**
   * Sends `socket` the events after `after` up to `upTo`, page by page, until the window's bytes
   * are spent (at least one page). Returns the last seq sent.
   */
  #replay(socket: WebSocket, after: number, upTo: number): number {
    let lastSeq = after;
    let sent = 0;
    while (lastSeq < upTo && sent < WS_REPLAY_WINDOW_BYTES) {
      const page = this.#page(lastSeq, upTo);
      if (page.length === 0) break;
      for (const event of page) {
        socket.send(event.json);
        sent += event.json.length;
      }
      lastSeq = page[page.length - 1]!.seq;
    }
    return lastSeq;
  }

  /**
   * After a replay window that did not reach `upTo`: the socket closes with REPLAY_CONTINUES and
   * gets nothing more; its client resumes with `?after=<lastSeq>`.
   */
  #settle(socket: WebSocket, lastSeq: number, upTo: number, deltas: boolean): void {
    if (lastSeq >= upTo) {
      socket.serializeAttachment((deltas ? { lastSeq, deltas } : { lastSeq }) satisfies Attachment);
      return;
    }
    socket.serializeAttachment({ lastSeq, resuming: true } satisfies Attachment);
    socket.close(REPLAY_CONTINUES, `the replay continues: reconnect with after=${lastSeq}`);
  }

  /**
   * Opens a socket replaying from `after`; `protocol` is the subprotocol to answer, if any;
   * `deltas` subscribes it to live text deltas too. A replay longer than one window sends the
   * window and closes with REPLAY_CONTINUES.
   */
  open(after: number, protocol: string | undefined, deltas: boolean, cap: number): Response {
    const refused = this.#refuse(cap);
    if (refused) return refused;
    const pair = new WebSocketPair();
    const server = pair[1];
    this.ctx.acceptWebSocket(server);
    const upTo = this.log.nextSeq() - 1;
    this.#settle(server, this.#replay(server, after, upTo), upTo, deltas);
    return new Response(null, {
      status: 101,
      webSocket: pair[0],
      headers: protocol === undefined ? {} : { "sec-websocket-protocol": protocol },
    });
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
    for (const subscriber of this.#sse) this.#fill(subscriber, 0);
    for (const socket of this.ctx.getWebSockets()) {
      try {
        const attachment = socket.deserializeAttachment() as Attachment | null;
        if (attachment?.resuming) continue;
        let lastSeq = attachment?.lastSeq ?? -1;
        const deltas = attachment?.deltas === true;
        if (events[0]!.seq > lastSeq + 1) {
          // the socket missed events (it was attached while we were away): replay the gap first
          const upTo = events[0]!.seq - 1;
          lastSeq = this.#replay(socket, lastSeq, upTo);
          if (lastSeq < upTo) {
            this.#settle(socket, lastSeq, upTo, deltas);
            continue;
          }
        }
        for (const e of events) {
          if (e.seq <= lastSeq) continue;
          socket.send(JSON.stringify(e));
          lastSeq = e.seq;
        }
        socket.serializeAttachment({ ...attachment, lastSeq } satisfies Attachment);
      } catch {
        // a closed or broken socket: the client reconnects with `after` and loses nothing
      }
    }
  }

  /**
   * A model step's live text (the turn driver's `live` port), to the subscribers that asked for
   * deltas; best effort, nothing is stored.
   */
  delta(text: Omit<TextDelta, "type">): void {
    const delta: TextDelta = { type: "assistant/delta", ...text };
    let message: string | undefined;
    for (const subscriber of this.#sse) {
      if (!subscriber.deltas) continue;
      message ??= JSON.stringify(delta);
      this.#offer(subscriber, `event: assistant/delta\ndata: ${message}\n\n`, SSE_DELTA_SLACK_BYTES);
    }
    for (const socket of this.ctx.getWebSockets()) {
      try {
        const attachment = socket.deserializeAttachment() as Attachment | null;
        if (attachment?.deltas !== true || attachment.resuming) continue;
        message ??= JSON.stringify(delta);
        socket.send(message);
      } catch {
        // a closed socket: deltas are not replayed, the logged message follows anyway
      }
    }
  }
}
