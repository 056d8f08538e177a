import { createParser } from "eventsource-parser";
import type { WebSocketLike, SocketEvent } from "./stream";
import type { FetchLike } from "./transport";

/**
 * The event stream over Server-Sent Events (`Accept: text/event-stream`), shaped like the part of
 * a WebSocket the stream uses, so `EventStream` keeps one reconnect, de-duplication and gap-fill
 * logic for both transports. The token goes in the `Authorization` header (never the URL); the
 * resume point is the URL's `?after=` (the stream passes the last seq it yielded). An answer that
 * is not `200 text/event-stream` is an error (the stream then asks over HTTP why), and the end of
 * the response is a close.
 */
export function sseSocket(fetchImpl: FetchLike, url: string, token: string | undefined): WebSocketLike {
  const listeners: Record<string, ((event: SocketEvent) => void)[]> = {};
  const emit = (type: string, event: SocketEvent = {}): void => {
    for (const listener of listeners[type] ?? []) listener(event);
  };
  const controller = new AbortController();
  let ended = false;
  const end = (type: "close" | "error", event: SocketEvent): void => {
    if (ended) return;
    ended = true;
    emit(type, event);
    if (type === "error") emit("close", { code: 1006, reason: "error" });
  };
  const headers: Record<string, string> = { accept: "text/event-stream" };
  if (token) headers.authorization = `Bearer ${token}`;
  queueMicrotask(async () => {
    try {
      const response = await fetchImpl(url, { headers, signal: controller.signal });
      const type = response.headers.get("content-type") ?? "";
      if (response.status !== 200 || !/^text\/event-stream/i.test(type) || !response.body) {
        await response.body?.cancel().catch(() => {});
        end("error", { reason: `HTTP ${response.status}` });
        return;
      }
      emit("open");
      const parser = createParser({ onEvent: (message) => emit("message", { data: message.data }) });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
      end("close", { code: 1000, reason: "the stream ended" });
    } catch {
      end(controller.signal.aborted ? "close" : "error", { code: 1000 });
    }
  });
  return {
    addEventListener(type, listener) {
      const list = listeners[type] ?? [];
      list.push(listener);
      listeners[type] = list;
    },
    close() {
      controller.abort();
      end("close", { code: 1000, reason: "closed" });
    },
  };
}
