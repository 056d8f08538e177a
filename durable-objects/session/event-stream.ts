import type { SessionEvent } from "../../src/contract/events";
import type { EventLog } from "../store/event-log";
import { KEEPALIVE_PING, KEEPALIVE_PONG } from "../../src/contract/stream";

/**
 * Live event streams over hibernatable WebSockets. Each socket's attachment remembers the last
 * seq it was sent, so a replay followed by live pushes never skips or repeats an event, also
 * after the object hibernated or was evicted and woke again.
 */

interface Attachment {
  lastSeq: number;
  /** The subscriber asked for live text deltas (`?deltas=true`). */
  deltas?: boolean;
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

const REPLAY_PAGE = 500;
/** A comment line this often keeps proxies from closing an idle SSE stream. */
const SSE_HEARTBEAT_MS = 25_000;

/** An open Server-Sent Events subscriber: where it is in the log, and how to write to it. */
interface SseSubscriber {
  lastSeq: number;
  deltas: boolean;
  write(text: string): void;
  close(): void;
}

const encoder = new TextEncoder();

/** One log event as an SSE event: its seq as the id (for `Last-Event-ID`), its type as the name. */
function sseEvent(event: SessionEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

export class EventStream {
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

  /**
   * Opens a Server-Sent Events stream replaying from `after`, then live: each event as
   * `id: <seq>` / `event: <type>` / `data: <event JSON>`, a comment line every 25 s, and with
   * `deltas` also `event: assistant/delta` messages (no id). A write that fails (the client went
   * away) drops the subscriber; it reconnects with `Last-Event-ID` and loses nothing.
   */
  openSse(after: number, deltas = false): Response {
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const writer = writable.getWriter();
    const subscriber: SseSubscriber = {
      lastSeq: after,
      deltas,
      write: (text) => {
        writer.write(encoder.encode(text)).catch(() => subscriber.close());
      },
      close: () => {
        if (!this.#sse.delete(subscriber)) return;
        clearInterval(heartbeat);
        writer.close().catch(() => {});
      },
    };
    const heartbeat = setInterval(() => subscriber.write(": keepalive\n\n"), SSE_HEARTBEAT_MS);
    this.#sse.add(subscriber);
    subscriber.write(": stream open\n\n");
    this.#catchUp(subscriber, this.log.nextSeq() - 1);
    return new Response(readable, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache, no-transform",
        "x-accel-buffering": "no",
      },
    });
  }

  /** Sends `subscriber` every event after its `lastSeq` up to `upTo`, from the log, in pages. */
  #catchUp(subscriber: SseSubscriber, upTo: number): void {
    while (subscriber.lastSeq < upTo) {
      const page = this.log.page(subscriber.lastSeq, Math.min(REPLAY_PAGE, upTo - subscriber.lastSeq));
      if (page.length === 0) return;
      subscriber.write(page.map(sseEvent).join(""));
      subscriber.lastSeq = page[page.length - 1]!.seq;
    }
  }

  /**
   * Opens a socket replaying from `after`; `protocol` is the subprotocol to answer, if any;
   * `deltas` subscribes it to live text deltas too.
   */
  open(after: number, protocol: string | undefined, deltas = false): Response {
    const pair = new WebSocketPair();
    const server = pair[1];
    this.ctx.acceptWebSocket(server);
    let lastSeq = after;
    for (;;) {
      const page = this.log.page(lastSeq, REPLAY_PAGE);
      for (const event of page) server.send(JSON.stringify(event));
      if (page.length > 0) lastSeq = page[page.length - 1]!.seq;
      if (page.length < REPLAY_PAGE) break;
    }
    server.serializeAttachment((deltas ? { lastSeq, deltas } : { lastSeq }) satisfies Attachment);
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

  /** Pushes committed events to every open socket and SSE stream. A failing one never affects the others. */
  publish(events: readonly SessionEvent[]): void {
    if (events.length === 0) return;
    for (const wake of [...this.#waiters]) wake();
    for (const subscriber of this.#sse) {
      // a subscriber behind the first new event (it opened while they were committing) catches up first
      this.#catchUp(subscriber, events[0]!.seq - 1);
      const fresh = events.filter((e) => e.seq > subscriber.lastSeq);
      if (fresh.length === 0) continue;
      subscriber.write(fresh.map(sseEvent).join(""));
      subscriber.lastSeq = fresh[fresh.length - 1]!.seq;
    }
    for (const socket of this.ctx.getWebSockets()) {
      try {
        const attachment = socket.deserializeAttachment() as Attachment | null;
        let lastSeq = attachment?.lastSeq ?? -1;
        if (events[0]!.seq > lastSeq + 1) {
          // the socket missed events (it was attached while we were away): replay the gap first
          for (const e of this.log.page(lastSeq, events[0]!.seq - lastSeq - 1))
            socket.send(JSON.stringify(e));
          lastSeq = events[0]!.seq - 1;
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

  /** Sends a live text delta to the subscribers that asked for them; best effort, nothing is stored. */
  publishDelta(delta: TextDelta): void {
    let message: string | undefined;
    for (const subscriber of this.#sse) {
      if (!subscriber.deltas) continue;
      message ??= JSON.stringify(delta);
      subscriber.write(`event: assistant/delta\ndata: ${message}\n\n`);
    }
    for (const socket of this.ctx.getWebSockets()) {
      try {
        if ((socket.deserializeAttachment() as Attachment | null)?.deltas !== true) continue;
        message ??= JSON.stringify(delta);
        socket.send(message);
      } catch {
        // a closed socket: deltas are not replayed, the logged message follows anyway
      }
    }
  }
}
