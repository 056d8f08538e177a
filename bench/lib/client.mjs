// A small HTTP + WebSocket client for the public API (api.md), from Node 22's fetch/WebSocket.

const REQUEST_TIMEOUT_MS = 15_000;

export class Client {
  constructor(url, token) {
    this.url = url;
    this.token = token;
  }

  withToken(token) {
    return new Client(this.url, token);
  }

  /**
   * One request; resolves with { status, body } (body parsed as JSON when there is one).
   * `timeoutMs` bounds it (default 15 s; long-polls pass more than their `wait`).
   */
  async call(method, path, body, expected, timeoutMs = REQUEST_TIMEOUT_MS) {
    const response = await fetch(`${this.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    const parsed = text ? JSON.parse(text) : undefined;
    if (expected !== undefined && response.status !== expected) {
      throw new Error(
        `${method} ${path}: expected ${expected}, got ${response.status} ${text.slice(0, 300)}`,
      );
    }
    return { status: response.status, body: parsed };
  }

  async createSession(options = {}) {
    return (await this.call("POST", "/v1/sessions", options, 201)).body;
  }

  async describe(id) {
    return (await this.call("GET", `/v1/sessions/${id}`, undefined, 200)).body;
  }

  async send(id, content, idempotencyKey) {
    const body = idempotencyKey === undefined ? { content } : { content, idempotencyKey };
    return (await this.call("POST", `/v1/sessions/${id}/messages`, body, 202)).body;
  }

  /** Opens the event stream after `after` (with live text deltas if asked); resolves once the socket is open. */
  openStream(id, after = -1, { deltas = false } = {}) {
    const wsUrl = `${this.url.replace(/^http/, "ws")}/v1/sessions/${id}/events/stream?after=${after}${deltas ? "&deltas=true" : ""}`;
    return EventStream.open(wsUrl, ["subagents.v1", `bearer.${this.token}`]);
  }
}

/** Event stream reader: `next(predicate, timeoutMs)` resolves with the first matching event. */
export class EventStream {
  #socket;
  #buffer = [];
  #waiter = null;
  #closed = null;

  static open(url, protocols, timeoutMs = 10_000) {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, protocols);
      const timer = setTimeout(() => {
        socket.close();
        reject(new Error("event stream did not open in time"));
      }, timeoutMs);
      const stream = new EventStream(socket);
      socket.addEventListener("open", () => {
        clearTimeout(timer);
        if (socket.protocol !== "subagents.v1")
          reject(new Error(`unexpected subprotocol ${socket.protocol}`));
        else resolve(stream);
      });
      socket.addEventListener("error", () => {
        clearTimeout(timer);
        reject(new Error("event stream failed to open"));
      });
    });
  }

  constructor(socket) {
    this.#socket = socket;
    socket.addEventListener("message", (message) => {
      this.#buffer.push(JSON.parse(String(message.data)));
      this.#wake();
    });
    socket.addEventListener("close", (event) => {
      this.#closed = `closed (${event.code})`;
      this.#wake();
    });
  }

  #wake() {
    const waiter = this.#waiter;
    this.#waiter = null;
    waiter?.();
  }

  /** Resolves with the first buffered or future event that matches; events before it are dropped. */
  async next(predicate, timeoutMs) {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      while (this.#buffer.length > 0) {
        const event = this.#buffer.shift();
        if (predicate(event)) return event;
      }
      if (this.#closed) throw new Error(`event stream ${this.#closed}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error("timed out waiting for an event");
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  close() {
    this.#socket.close(1000, "done");
  }
}

/** Text of an event's content blocks (assistant/message and user/message). */
export function textOf(event) {
  const content = event?.data?.content;
  if (typeof content === "string") return content;
  return Array.isArray(content) ? content.map((b) => (b.type === "text" ? b.text : "")).join("") : "";
}
