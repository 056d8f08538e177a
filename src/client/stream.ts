import { KEEPALIVE_PING, KEEPALIVE_PONG, STREAM_PROTOCOL } from "../contract/stream";
import { SubagentError } from "./errors";
import type { EventPage, SessionEvent, TextDelta } from "./types";

/**
 * A session's live event stream as an async iterator that survives disconnects. It opens the
 * WebSocket with `?after=<last seen seq>` and the token as a subprotocol, yields every event
 * exactly once in `seq` order (duplicates from a replay are dropped; a gap, which the server
 * should never leave, is filled from the paged HTTP log before going on) and reconnects with
 * backoff after an unexpected close. A refusal the server states over HTTP (401, 403, 404) ends
 * the iteration with that `SubagentError`.
 */

export { STREAM_PROTOCOL };

/** The part of a WebSocket the stream uses (the browser's, Node's, or an adapter). */
export interface WebSocketLike {
  binaryType?: string;
  addEventListener(
    type: "open" | "message" | "close" | "error",
    listener: (event: SocketEvent) => void,
  ): void;
  close(code?: number, reason?: string): void;
  /** Sockets that can send get a keepalive (`ping`, answered `pong`); SSE streams cannot. */
  send?(data: string): void;
}

export interface SocketEvent {
  data?: unknown;
  code?: number;
  reason?: string;
}

export type WebSocketFactory = (url: string, protocols: string[]) => WebSocketLike;

export type StreamState = "connecting" | "open" | "reconnecting" | "closed";

export interface StreamOptions {
  /** Start after this seq (default -1: the whole log, then live events). */
  after?: number | undefined;
  /** Aborting ends the iteration (no error). */
  signal?: AbortSignal | undefined;
  /** Backoff between reconnects: starts at `minDelayMs` (250), doubles up to `maxDelayMs` (10 s). */
  minDelayMs?: number | undefined;
  maxDelayMs?: number | undefined;
  /** Consecutive failed connects before giving up with `STREAM_CLOSED` (default: never give up). */
  maxAttempts?: number | undefined;
  /**
   * WebSocket form: send a keepalive `ping` this often (default 25 000 ms; 0: never). A socket
   * on which nothing arrives for two and a half intervals is treated as lost and reconnected.
   */
  keepaliveMs?: number | undefined;
  /** Called on every state change, with the error that caused a reconnect if any. */
  onState?: ((state: StreamState, error?: unknown) => void) | undefined;
  /**
   * Live text of streaming model steps, as it is generated (subscribes with `?deltas=true`).
   * Deltas are not logged and not replayed after a reconnect; the `assistant/message` follows.
   */
  onDelta?: ((delta: TextDelta) => void) | undefined;
  /**
   * `websocket` (default; the token as a subprotocol) or `sse` (Server-Sent Events over the
   * client's fetch, the token in the Authorization header): the same events either way.
   */
  transport?: "websocket" | "sse" | undefined;
}

/** What the stream needs from the client: where to connect, and HTTP reads for gaps and probes. */
export interface StreamDeps {
  socketUrl(after: number): string;
  token: string | undefined;
  socket: WebSocketFactory;
  page(after: number, limit: number): Promise<EventPage>;
  /** A cheap authorized read of the session: rejects with the server's reason when access fails. */
  probe(): Promise<unknown>;
}

const OPEN_TIMEOUT_MS = 15_000;
/** How often an open WebSocket sends its keepalive `ping` (unless `keepaliveMs` says otherwise). */
const KEEPALIVE_MS = 25_000;
const FATAL_STATUSES = new Set([400, 401, 403, 404]);

export class EventStream implements AsyncIterableIterator<SessionEvent> {
  #lastSeq: number;
  readonly #deps: StreamDeps;
  readonly #options: StreamOptions;
  readonly #queue: SessionEvent[] = [];
  /** Pending `next()` calls, oldest first (a consumer may ask again before an answer). */
  readonly #waiters: { resolve: (r: IteratorResult<SessionEvent>) => void; reject: (e: unknown) => void }[] =
    [];
  #socket: WebSocketLike | undefined;
  #chain: Promise<void> = Promise.resolve();
  #failures = 0;
  #done = false;
  #error: unknown;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #keepalive: ReturnType<typeof setInterval> | undefined;
  /** When the open socket last sent anything (an event, a delta or a `pong`). */
  #heard = 0;

  constructor(deps: StreamDeps, options: StreamOptions = {}) {
    this.#deps = deps;
    this.#options = options;
    this.#lastSeq = options.after ?? -1;
    if (options.signal?.aborted) {
      this.#done = true;
      return;
    }
    options.signal?.addEventListener("abort", () => this.close(), { once: true });
    this.#connect();
  }

  /** The seq of the last event this stream yielded or queued (-1 before any). */
  get lastSeq(): number {
    return this.#lastSeq;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<SessionEvent>> {
    const event = this.#queue.shift();
    if (event) return Promise.resolve({ value: event, done: false });
    if (this.#error !== undefined) {
      const error = this.#error;
      this.#error = undefined;
      return Promise.reject(error);
    }
    if (this.#done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
    });
  }

  return(): Promise<IteratorResult<SessionEvent>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  /** Stops the stream; a pending `next()` resolves as done. */
  close(): void {
    this.#finish();
  }

  // ---- internals ----

  #state(state: StreamState, error?: unknown): void {
    try {
      this.#options.onState?.(state, error);
    } catch {
      // an observer's failure never breaks the stream
    }
  }

  #connect(): void {
    if (this.#done) return;
    this.#state(this.#failures === 0 ? "connecting" : "reconnecting");
    let opened = false;
    let settled = false;
    let socket: WebSocketLike;
    try {
      socket = this.#deps.socket(this.#deps.socketUrl(this.#lastSeq), this.#protocols());
    } catch (error) {
      this.#retry(error);
      return;
    }
    this.#socket = socket;
    if ("binaryType" in socket) socket.binaryType = "arraybuffer";
    const openTimer = setTimeout(() => {
      if (!opened) {
        settled = true;
        socket.close(4000, "open timeout");
        this.#lost(false, new SubagentError(0, "TIMEOUT", "the event stream did not open in time"));
      }
    }, OPEN_TIMEOUT_MS);
    socket.addEventListener("open", () => {
      opened = true;
      clearTimeout(openTimer);
      this.#failures = 0;
      this.#state("open");
      this.#startKeepalive(socket, () => {
        // nothing came back for a while: a proxy dropped the connection without closing it
        settled = true;
        socket.close(4002, "keepalive timeout");
        this.#lost(true, new SubagentError(0, "STREAM_CLOSED", "the event stream stopped answering"));
      });
    });
    socket.addEventListener("message", (event) => {
      this.#heard = Date.now();
      if (this.#done || this.#socket !== socket) return;
      this.#chain = this.#chain
        .then(() => this.#receive(event.data))
        .catch((error: unknown) => {
          // an unreadable message or a failed gap fill: start over from the last good seq
          if (this.#socket === socket) {
            settled = true;
            clearTimeout(openTimer);
            socket.close(4001, "resync");
            this.#lost(true, error);
          }
        });
    });
    const onEnd = (error?: unknown) => {
      clearTimeout(openTimer);
      this.#stopKeepalive();
      if (settled) return;
      settled = true;
      this.#lost(opened, error);
    };
    socket.addEventListener("close", (event) =>
      onEnd(new SubagentError(0, "STREAM_CLOSED", `the event stream closed (${event.code ?? "?"})`)),
    );
    socket.addEventListener("error", () =>
      onEnd(new SubagentError(0, "NETWORK_ERROR", "the event stream failed")),
    );
  }

  #protocols(): string[] {
    return this.#deps.token ? [STREAM_PROTOCOL, `bearer.${this.#deps.token}`] : [STREAM_PROTOCOL];
  }

  /**
   * Sends `ping` every `keepaliveMs` while `socket` is the open one; when nothing at all (an
   * event or a `pong`) arrived for two and a half intervals, `silent` ends the connection.
   */
  #startKeepalive(socket: WebSocketLike, silent: () => void): void {
    this.#stopKeepalive();
    const every = this.#options.keepaliveMs ?? KEEPALIVE_MS;
    if (typeof socket.send !== "function" || every <= 0) return;
    this.#heard = Date.now();
    this.#keepalive = setInterval(() => {
      if (this.#done || this.#socket !== socket) return this.#stopKeepalive();
      if (Date.now() - this.#heard > every * 2.5) {
        this.#stopKeepalive();
        return silent();
      }
      try {
        socket.send?.(KEEPALIVE_PING);
      } catch {
        // a socket that cannot send any more is about to close
      }
    }, every);
  }

  #stopKeepalive(): void {
    if (this.#keepalive !== undefined) clearInterval(this.#keepalive);
    this.#keepalive = undefined;
  }

  async #receive(data: unknown): Promise<void> {
    const text = await textOf(data);
    if (text === KEEPALIVE_PONG) return;
    const message = JSON.parse(text) as SessionEvent | TextDelta;
    if (message?.type === "assistant/delta" && !("seq" in message)) {
      try {
        this.#options.onDelta?.(message as TextDelta);
      } catch {
        // a consumer's callback never breaks the stream
      }
      return;
    }
    const event = message as SessionEvent;
    if (typeof event?.seq !== "number")
      throw new SubagentError(0, "BAD_RESPONSE", "a stream message has no seq");
    if (event.seq <= this.#lastSeq) return; // already yielded (a replay after a reconnect)
    while (event.seq > this.#lastSeq + 1) {
      // a gap: read the missing events from the log first
      const missing = event.seq - this.#lastSeq - 1;
      const page = await this.#deps.page(this.#lastSeq, Math.min(missing, 500));
      const fill = page.events.filter((e) => e.seq > this.#lastSeq && e.seq < event.seq);
      if (fill.length === 0) throw new SubagentError(0, "BAD_RESPONSE", "the log does not fill a stream gap");
      for (const e of fill) this.#push(e);
    }
    this.#push(event);
  }

  #push(event: SessionEvent): void {
    if (this.#done || event.seq !== this.#lastSeq + 1) return;
    this.#lastSeq = event.seq;
    const waiter = this.#waiters.shift();
    if (waiter) {
      waiter.resolve({ value: event, done: false });
    } else {
      this.#queue.push(event);
    }
  }

  /** The socket is gone: decide between giving up and reconnecting. */
  #lost(wasOpen: boolean, cause: unknown): void {
    if (this.#done) return;
    this.#socket = undefined;
    if (wasOpen) this.#failures = 0;
    // Before reconnecting, ask over HTTP: a browser's WebSocket never shows why an upgrade failed.
    void this.#chain
      .then(() => this.#deps.probe())
      .then(
        () => this.#retry(cause),
        (error: unknown) => {
          if (error instanceof SubagentError && FATAL_STATUSES.has(error.status)) this.#fail(error);
          else this.#retry(cause);
        },
      );
  }

  #retry(cause: unknown): void {
    if (this.#done) return;
    this.#failures += 1;
    const max = this.#options.maxAttempts ?? Number.POSITIVE_INFINITY;
    if (this.#failures > max) {
      this.#fail(
        new SubagentError(0, "STREAM_CLOSED", "the event stream could not reconnect", undefined, cause),
      );
      return;
    }
    this.#state("reconnecting", cause);
    const min = this.#options.minDelayMs ?? 250;
    const maxDelay = this.#options.maxDelayMs ?? 10_000;
    const base = Math.min(maxDelay, min * 2 ** Math.max(0, this.#failures - 1));
    const delay = base / 2 + Math.random() * (base / 2);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#connect();
    }, delay);
  }

  #fail(error: unknown): void {
    if (this.#done) return;
    const waiters = this.#waiters.splice(0);
    this.#finish();
    if (waiters.length === 0) this.#error = error;
    for (const waiter of waiters) waiter.reject(error);
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.#stopKeepalive();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    const socket = this.#socket;
    this.#socket = undefined;
    try {
      socket?.close(1000, "done");
    } catch {
      // already closed
    }
    for (const waiter of this.#waiters.splice(0)) waiter.resolve({ value: undefined, done: true });
    this.#state("closed");
  }
}

async function textOf(data: unknown): Promise<string> {
  if (typeof data === "string") return data;
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return new TextDecoder().decode(data);
  if (data && typeof (data as { text?: unknown }).text === "function") return (data as Blob).text();
  throw new SubagentError(0, "BAD_RESPONSE", "a stream message is not text");
}
