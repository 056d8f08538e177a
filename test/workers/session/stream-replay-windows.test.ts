import { describe, expect, it } from "vitest";
import {
  type SessionEvent,
  type SocketEvent,
  SubagentsClient,
  type WebSocketFactory,
} from "../../../src/client";
import { REPLAY_CONTINUES } from "../../../durable-objects/kernel/subscribers";
import { ADMIN, createSession, openStream, sendMessage, workerFetch } from "../../support/api";
import { allEvents, sleep, waitForTurnEnds, type WireEvent } from "../../support/logs";

/**
 * A WebSocket replay waits for its reader (README, Security and limits: "Streams"): workerd's WebSocket has no
 * `bufferedAmount`, so one connection carries at most one window (about 1 MiB) of a replay and
 * then closes with 4008; the reader resumes with `?after=<its last seq>`. The attack it answers:
 * a socket that reads nothing made the object queue the whole log for it. A reader loses nothing:
 * every event arrives once and in order, across windows, and live events follow as before.
 */

const WINDOW_BYTES = 1024 * 1024;

/** A log of about 1.9 MB: each turn logs the message and its echo (about 2 × 240 KiB). */
async function bigLog(): Promise<{ id: string; log: WireEvent[] }> {
  const { id } = await createSession();
  for (let turn = 0; turn < 4; turn++) await sendMessage(id, `${turn} ${"w".repeat(240 * 1024)}`);
  await waitForTurnEnds(id, 4);
  return { id, log: await allEvents(id) };
}

/** One connection: what it delivered before it closed, and the close code (ends after `lastSeq`). */
async function oneConnection(id: string, after: number, lastSeq: number) {
  const response = await openStream(id, { after });
  expect(response.status).toBe(101);
  const socket = response.webSocket!;
  const events: WireEvent[] = [];
  let bytes = 0;
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason }));
  });
  socket.addEventListener("message", (event) => {
    bytes += String(event.data).length;
    events.push(JSON.parse(String(event.data)) as WireEvent);
    if (events.at(-1)!.seq === lastSeq) socket.close(1000, "done");
  });
  socket.accept();
  return { events, bytes: () => bytes, closed: await closed };
}

describe("WebSocket replays in windows (README, Security and limits: Streams)", () => {
  it("sends one window of a long replay and closes with 4008; resuming after the last seq gives the rest, once and in order", async () => {
    const { id, log } = await bigLog();
    const logBytes = log.reduce((sum, e) => sum + JSON.stringify(e).length, 0);
    expect(logBytes).toBeGreaterThan(WINDOW_BYTES);
    const lastSeq = log.at(-1)!.seq;

    const received: WireEvent[] = [];
    const windows: number[] = [];
    for (let after = -1; received.at(-1)?.seq !== lastSeq; after = received.at(-1)!.seq) {
      const connection = await oneConnection(id, after, lastSeq);
      received.push(...connection.events);
      windows.push(connection.bytes());
      if (received.at(-1)?.seq === lastSeq) break;
      expect(connection.closed.code).toBe(REPLAY_CONTINUES);
      expect(connection.closed.reason).toBe(
        `the replay continues: reconnect with after=${connection.events.at(-1)!.seq}`,
      );
      expect(windows.length).toBeLessThan(10);
    }
    expect(REPLAY_CONTINUES).toBe(4008);
    expect(windows.length).toBeGreaterThan(1);
    // a window stops at the first event that reaches 1 MiB: never more than one event past it
    const largest = Math.max(...log.map((e) => JSON.stringify(e).length));
    for (const bytes of windows) expect(bytes).toBeLessThan(WINDOW_BYTES + largest);
    expect(received.map((e) => e.seq)).toEqual(log.map((e) => e.seq));
    expect(received).toEqual(log);
  });

  it("keeps the socket open for live events once its replay fits in one window", async () => {
    const { id, log } = await bigLog();
    // a cursor near the end: the rest of the replay fits in one window
    const after = log.at(-3)!.seq;
    const response = await openStream(id, { after });
    const socket = response.webSocket!;
    const events: WireEvent[] = [];
    let closed = false;
    socket.addEventListener("message", (event) => events.push(JSON.parse(String(event.data))));
    socket.addEventListener("close", () => {
      closed = true;
    });
    socket.accept();
    await sendMessage(id, "live after the replay");
    const full = await waitForTurnEnds(id, 5);
    const deadline = performance.now() + 10_000;
    while (events.at(-1)?.seq !== full.at(-1)!.seq && performance.now() < deadline) await sleep(10);
    await sleep(100); // a duplicate would arrive after the last one
    expect(events).toEqual(full.slice(after + 1));
    expect(closed).toBe(false);
    socket.close(1000, "done");
  });

  it("the SDK's WebSocket stream yields every event of a multi-window replay once and in order", async () => {
    const { id, log } = await bigLog();
    const codes: number[] = [];
    const client = new SubagentsClient({
      baseUrl: "http://example.com",
      token: ADMIN,
      fetch: (input: string, init: RequestInit) => workerFetch(new Request(input, init)),
      webSocket: inProcessSockets(codes),
    });
    const stream = client.stream(id, { minDelayMs: 10 });
    const seen: SessionEvent[] = [];
    for await (const event of stream) {
      seen.push(event);
      if (event.seq === log.at(-1)!.seq) break;
    }
    expect(seen).toEqual(log);
    expect(codes).toContain(REPLAY_CONTINUES);
  });
});

describe("SSE replays read as their reader reads (README, Security and limits: Streams)", () => {
  it("gives a slow reader every event of a long log once and in order, characters split across chunks intact", async () => {
    const { id } = await createSession();
    // multi-byte characters throughout: the response's chunks (at most 16 KiB) cut through them
    for (let turn = 0; turn < 3; turn++) await sendMessage(id, `${turn} ${"é€😀".repeat(20 * 1024)}`);
    await waitForTurnEnds(id, 3);
    const log = await allEvents(id);
    const response = await workerFetch(
      new Request(`http://example.com/v1/sessions/${id}/events/stream`, {
        headers: { authorization: `Bearer ${ADMIN}`, accept: "text/event-stream" },
      }),
    );
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    const events: WireEvent[] = [];
    while (events.at(-1)?.seq !== log.at(-1)!.seq) {
      const { done, value } = await reader.read();
      if (done) break;
      text += value;
      await sleep(1); // a reader slower than the log
      let end = text.indexOf("\n\n");
      while (end >= 0) {
        const data = text
          .slice(0, end)
          .split("\n")
          .find((line) => line.startsWith("data: "));
        if (data) events.push(JSON.parse(data.slice(6)) as WireEvent);
        text = text.slice(end + 2);
        end = text.indexOf("\n\n");
      }
    }
    await reader.cancel();
    expect(events).toEqual(log);
  });
});

/** A WebSocket factory over the Worker's fetch, recording the close codes the server sent. */
function inProcessSockets(codes: number[]): WebSocketFactory {
  return (url, protocols) => {
    const listeners = new Map<string, ((event: SocketEvent) => void)[]>();
    const emit = (type: string, event: SocketEvent) => {
      for (const listener of listeners.get(type) ?? []) listener(event);
    };
    let socket: WebSocket | undefined;
    let ended = false;
    const end = (code: number) => {
      if (ended) return;
      ended = true;
      emit("close", { code, reason: "" });
    };
    void workerFetch(
      new Request(url.replace(/^ws/, "http"), {
        headers: { upgrade: "websocket", "sec-websocket-protocol": protocols.join(", ") },
      }),
    ).then((response) => {
      socket = response.webSocket ?? undefined;
      if (!socket) return end(1006);
      socket.addEventListener("message", (event) => emit("message", { data: event.data }));
      socket.addEventListener("close", (event) => {
        codes.push(event.code);
        end(event.code);
      });
      socket.accept();
      emit("open", {});
    });
    return {
      addEventListener(type, listener) {
        listeners.set(type, [...(listeners.get(type) ?? []), listener]);
      },
      send(data) {
        socket?.send(data);
      },
      close(code, reason) {
        try {
          socket?.close(code ?? 1000, reason ?? "");
        } catch {
          // already closed
        }
        end(code ?? 1000);
      },
    };
  };
}
