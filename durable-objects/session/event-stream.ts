import type { SessionEvent } from "../../src/contract/events";
import type { EventLog } from "../store/event-log";

/**
 * Live event streams over hibernatable WebSockets. Each socket's attachment remembers the last
 * seq it was sent, so a replay followed by live pushes never skips or repeats an event, also
 * after the object hibernated or was evicted and woke again.
 */

interface Attachment {
  lastSeq: number;
}

const REPLAY_PAGE = 500;

export class EventStream {
  constructor(
    readonly ctx: DurableObjectState,
    readonly log: EventLog,
  ) {}

  /** Opens a socket replaying from `after`; `protocol` is the subprotocol to answer, if any. */
  open(after: number, protocol: string | undefined): Response {
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
    server.serializeAttachment({ lastSeq } satisfies Attachment);
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
        socket.serializeAttachment({ lastSeq } satisfies Attachment);
      } catch {
        // a closed or broken socket: the client reconnects with `after` and loses nothing
      }
    }
  }
}
