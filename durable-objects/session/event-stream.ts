import type { SessionEvent } from "../../src/contract/events";
import type { EventLog } from "../store/event-log";

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

export class EventStream {
  constructor(
    readonly ctx: DurableObjectState,
    readonly log: EventLog,
  ) {}

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

  /** Pushes committed events to every open socket. A failing socket never affects the others. */
  publish(events: readonly SessionEvent[]): void {
    if (events.length === 0) return;
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

  /** Sends a live text delta to the sockets that asked for them; best effort, nothing is stored. */
  publishDelta(delta: TextDelta): void {
    let message: string | undefined;
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
