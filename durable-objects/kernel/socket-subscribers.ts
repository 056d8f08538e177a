import type { SessionEvent } from "../../src/contract/events";
import type { HostSocket, HostSockets } from "../host/port";
import type { EventLog } from "../store/event-log";
import { wirePage } from "./wire-events";

/**
 * A session's WebSocket subscribers (subscribers.ts): the host's hibernatable sockets, whose
 * attachment remembers the last seq each was sent, so a replay followed by live pushes never
 * skips or repeats an event, also after the object hibernated or was evicted and woke again.
 *
 * A WebSocket in workerd has no `bufferedAmount` and no drain event: `send()` queues without
 * bound and nothing tells the object whether the peer reads. So one connection carries at most
 * WS_REPLAY_WINDOW_BYTES of replay; a longer replay then closes the socket with
 * REPLAY_CONTINUES, and the client reconnects with `?after=<its last seq>` for the next window
 * (the SDK does so on any close). The close frame comes after the window, so only a reader that
 * read the whole window sees it; one that does not read holds one window and one slot.
 */

interface Attachment {
  lastSeq: number;
  /** The subscriber asked for live text deltas (`?deltas=true`). */
  deltas?: boolean;
  /** Closed with REPLAY_CONTINUES: gets nothing more, the client resumes on a new socket. */
  resuming?: boolean;
}

/** The WebSocket close code that ends one window of a longer replay: reconnect with `?after=`. */
export const REPLAY_CONTINUES = 4008;

/** Bytes of replay one WebSocket connection carries before it closes with REPLAY_CONTINUES. */
const WS_REPLAY_WINDOW_BYTES = 1024 * 1024;

export class SocketSubscribers {
  readonly #sockets: HostSockets;
  readonly #log: EventLog;

  constructor(sockets: HostSockets, log: EventLog) {
    this.#sockets = sockets;
    this.#log = log;
  }

  /** The open WebSockets (hibernated ones included). */
  open(): HostSocket[] {
    return this.#sockets.open();
  }

  /** The session was deleted: every socket closes with 4404. */
  closeAll(): void {
    for (const socket of this.open()) {
      try {
        socket.close(4404, "the session was deleted");
      } catch {
        // already closing
      }
    }
  }

  /**
   * Accepts a socket replaying from `after`; `protocol` is the subprotocol to answer, if any;
   * `deltas` subscribes it to live text deltas too. A replay longer than one window sends the
   * window and closes with REPLAY_CONTINUES.
   */
  accept(after: number, protocol: string | undefined, deltas: boolean): Response {
    const { socket, response } = this.#sockets.accept(protocol);
    const upTo = this.#log.nextSeq() - 1;
    this.#settle(socket, this.#replay(socket, after, upTo), upTo, deltas);
    return response;
  }

  /** Committed events, pushed to every socket (after the gap it missed, if any). */
  publish(events: readonly SessionEvent[]): void {
    for (const socket of this.open()) {
      try {
        const attachment = socket.attachment() as Attachment | null;
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
        socket.attach({ ...attachment, lastSeq } satisfies Attachment);
      } catch {
        // a closed or broken socket: the client reconnects with `after` and loses nothing
      }
    }
  }

  /** A live text delta (`message`: its JSON) to the sockets that asked for deltas. */
  delta(message: () => string): void {
    for (const socket of this.open()) {
      try {
        const attachment = socket.attachment() as Attachment | null;
        if (attachment?.deltas !== true || attachment.resuming) continue;
        socket.send(message());
      } catch {
        // a closed socket: deltas are not replayed, the logged message follows anyway
      }
    }
  }

  /**
   * Sends `socket` the events after `after` up to `upTo`, page by page, until the window's bytes
   * are spent (at least one page). Returns the last seq sent.
   */
  #replay(socket: HostSocket, after: number, upTo: number): number {
    let lastSeq = after;
    let sent = 0;
    while (lastSeq < upTo && sent < WS_REPLAY_WINDOW_BYTES) {
      const page = wirePage(this.#log, lastSeq, upTo);
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
  #settle(socket: HostSocket, lastSeq: number, upTo: number, deltas: boolean): void {
    if (lastSeq >= upTo) {
      socket.attach((deltas ? { lastSeq, deltas } : { lastSeq }) satisfies Attachment);
      return;
    }
    socket.attach({ lastSeq, resuming: true } satisfies Attachment);
    socket.close(REPLAY_CONTINUES, `the replay continues: reconnect with after=${lastSeq}`);
  }
}
