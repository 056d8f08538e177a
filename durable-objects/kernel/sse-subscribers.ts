import type { EventLog } from "../store/event-log";
import { type WireEvent, wirePage } from "./wire-events";

/**
 * A session's Server-Sent Events subscribers (subscribers.ts), held in memory (they keep the
 * object awake while they are open). SSE is a pull stream: the log is read a page at a time from
 * SQLite only when the response's reader has taken what was queued (one chunk of at most 16 KiB
 * ahead of it). Live events are read from the log the same way, so an idle reader holds one page
 * whatever the session writes. A keepalive or a delta is queued only once its reader caught up
 * with the log (it never overtakes an event), and dropped otherwise (best effort).
 */

/**
 * An SSE response's queue counts bytes and takes a chunk only while it is empty: one chunk ahead
 * of its reader (a queue of several would also reach the reader as one read).
 */
const ONE_CHUNK_AHEAD: QueuingStrategy<Uint8Array> = { highWaterMark: 1, size: (chunk) => chunk.byteLength };
/** A page goes out in chunks of at most this many bytes, so one queued or in flight stays small. */
const SSE_CHUNK_BYTES = 16 * 1024;
/** Bytes of deltas (and the events before them) an SSE queue may hold for a reader that lags. */
const SSE_DELTA_SLACK_BYTES = 256 * 1024;
/** A comment line this often keeps proxies from closing an idle SSE stream. */
const SSE_HEARTBEAT_MS = 25_000;

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

/** One log event as an SSE event: its seq as the id (for `Last-Event-ID`), its type as the name. */
function sseEvent(event: WireEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${event.json}\n\n`;
}

export class SseSubscribers {
  readonly #log: EventLog;
  readonly #open = new Set<SseSubscriber>();

  constructor(log: EventLog) {
    this.#log = log;
  }

  /** Open SSE responses not yet closed. */
  get size(): number {
    return this.#open.size;
  }

  /** The session was deleted: every response closes. */
  closeAll(): void {
    for (const subscriber of [...this.#open]) {
      subscriber.drop();
      try {
        subscriber.controller.close();
      } catch {
        // the reader went away first
      }
    }
  }

  /**
   * Opens a Server-Sent Events stream replaying from `after`, then live: each event as
   * `id: <seq>` / `event: <type>` / `data: <event JSON>`, a comment line every 25 s, and with
   * `deltas` also `event: assistant/delta` messages (no id). The first page is read now, the
   * rest of the log (live events included) only as the reader takes what is queued. A reader
   * that went away (the response was cancelled) frees its slot; it reconnects with
   * `Last-Event-ID` and loses nothing.
   */
  open(after: number, deltas: boolean): Response {
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
              if (this.#open.delete(sub) && heartbeat !== undefined) clearInterval(heartbeat);
            },
          };
          subscriber = sub;
          this.#open.add(sub);
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

  /** Committed events: readers with room take them from the log now, the others when they read. */
  publish(): void {
    for (const subscriber of this.#open) this.#fill(subscriber, 0);
  }

  /** A live text delta (`message`: its JSON) to the subscribers that asked for deltas. */
  delta(message: () => string): void {
    for (const subscriber of this.#open) {
      if (!subscriber.deltas) continue;
      this.#offer(subscriber, `event: assistant/delta\ndata: ${message()}\n\n`, SSE_DELTA_SLACK_BYTES);
    }
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
      const end = this.#log.nextSeq() - 1;
      while ((controller.desiredSize ?? 0) > -slack) {
        if (subscriber.pending.byteLength === 0) {
          const page = subscriber.lastSeq < end ? wirePage(this.#log, subscriber.lastSeq, end) : [];
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
      const behind = subscriber.lastSeq < this.#log.nextSeq() - 1;
      if (behind || subscriber.prefix || subscriber.pending.byteLength > 0) return;
      if ((subscriber.controller.desiredSize ?? 0) <= -slack) return;
      subscriber.controller.enqueue(encoder.encode(text));
    } catch {
      subscriber.drop();
    }
  }
}
