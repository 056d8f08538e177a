// A small HTTP client for the public API (api.md), as a real client would use it. Every request
// and every wait is bounded.

const REQUEST_TIMEOUT_MS = 15_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * @param {{url: string, token: string}} server
 * @param {string} method
 * @param {string} path
 * @param {{token?: string | null, body?: unknown}} [options]
 */
export async function api(server, method, path, options = {}) {
  const headers = {};
  const token = options.token === undefined ? server.token : options.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let body;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] = "application/json";
  }
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers,
    body,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await response.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

export async function createSession(server, body = {}) {
  const res = await api(server, "POST", "/v1/sessions", { body });
  if (res.status !== 201) throw new Error(`POST /v1/sessions: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function sendMessage(server, id, content, token) {
  const res = await api(server, "POST", `/v1/sessions/${id}/messages`, { body: { content }, token });
  if (res.status !== 202) throw new Error(`POST messages: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** The whole log of a session, following `next` page by page. */
export async function allEvents(server, id, token) {
  const events = [];
  let after = -1;
  for (let page = 0; page < 1_000; page++) {
    const res = await api(server, "GET", `/v1/sessions/${id}/events?after=${after}&limit=500`, { token });
    if (res.status !== 200) throw new Error(`GET events: ${res.status} ${JSON.stringify(res.body)}`);
    events.push(...res.body.events);
    if (res.body.next === null) return events;
    after = res.body.next;
  }
  throw new Error("GET events: more than 1000 pages");
}

/** Polls the log until `predicate(events)` holds; throws with the log's types after `timeoutMs`. */
export async function waitForEvents(server, id, predicate, timeoutMs = 20_000, token = undefined) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await allEvents(server, id, token);
    if (predicate(events)) return events;
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting on session ${id}; log: ${JSON.stringify(events.map((e) => `${e.seq}:${e.type}`))}`,
      );
    }
    await sleep(100);
  }
}

export function textOf(content) {
  return typeof content === "string" ? content : content.map((block) => block.text ?? "").join("");
}

export function assistantTexts(events) {
  return events.filter((e) => e.type === "assistant/message").map((e) => textOf(e.data.content));
}

export function turnEnds(events) {
  return events.filter((e) => e.type === "turn/end");
}

export function seqs(events) {
  return events.map((e) => e.seq);
}

export function range(from, toExclusive) {
  return Array.from({ length: toExclusive - from }, (_, i) => from + i);
}

/**
 * Opens the event stream with Node's standard WebSocket client: by default with the token as a
 * subprotocol next to `subagents.v1` (as browsers must, since they cannot set headers), or with
 * `auth: "header"` as an `Authorization` header and no subprotocol offered. Resolves with the
 * socket once it is open, and an `until(predicate, timeoutMs)` that waits for the received events
 * to satisfy `predicate` (every message is kept, in order, in `received`).
 */
export function openStream(server, id, { after, token, auth = "subprotocol" } = {}) {
  const query = after === undefined ? "" : `?after=${after}`;
  const url = `${server.wsUrl}/v1/sessions/${id}/events/stream${query}`;
  const bearer = token ?? server.token;
  const ws =
    auth === "header"
      ? new WebSocket(url, { headers: { authorization: `Bearer ${bearer}` } })
      : new WebSocket(url, ["subagents.v1", `bearer.${bearer}`]);
  const received = [];
  const waiters = new Set();
  let closed = null;
  const check = () => {
    for (const waiter of waiters) waiter();
  };
  ws.addEventListener("message", (event) => {
    received.push(
      JSON.parse(typeof event.data === "string" ? event.data : Buffer.from(event.data).toString("utf8")),
    );
    check();
  });
  ws.addEventListener("close", (event) => {
    closed = { code: event.code, reason: event.reason };
    check();
  });
  const stream = {
    ws,
    received,
    closed: () => closed,
    /** Waits until `predicate(received)` holds. */
    until(predicate, timeoutMs = 20_000) {
      return new Promise((resolveWait, reject) => {
        const waiter = () => {
          if (predicate(received)) {
            done();
            resolveWait(received);
          } else if (closed) {
            done();
            reject(
              new Error(`stream closed (${JSON.stringify(closed)}); got ${JSON.stringify(seqs(received))}`),
            );
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(
            new Error(`stream: timed out after ${timeoutMs} ms; got seqs ${JSON.stringify(seqs(received))}`),
          );
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(waiter);
        };
        waiters.add(waiter);
        waiter();
      });
    },
    close() {
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(1000, "done");
    },
  };
  return new Promise((resolveOpen, reject) => {
    const timer = setTimeout(() => {
      ws.close();
      reject(new Error("stream: not open after 15000 ms"));
    }, 15_000);
    ws.addEventListener("open", () => {
      clearTimeout(timer);
      resolveOpen(stream);
    });
    ws.addEventListener("error", (event) => {
      clearTimeout(timer);
      reject(new Error(`stream: WebSocket error (${event.message ?? "no detail"})`));
    });
  });
}

/** Waits for a run to settle (long polls of at most 10 s each); fails the test past `timeoutMs`. */
export async function settledRun(server, parentId, runId, timeoutMs = 180_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api(server, "GET", `/v1/sessions/${parentId}/runs/${runId}?wait=10000`);
    if (res.status !== 200) throw new Error(`run ${runId}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
    if (res.body.state === "settled") return res.body;
    if (Date.now() > deadline) throw new Error(`run ${runId} did not settle: ${JSON.stringify(res.body)}`);
  }
}
