import { expect } from "vitest";
import { ADMIN, api, openStream, sendMessage } from "./api";
import { script } from "./scripts";

/**
 * Reading a session's event log (paged over HTTP, or live over the event stream), waiting on it,
 * and picking events out of it. Every wait is bounded by real time (`performance.now()`), so it
 * also ends under the frozen clock of the fault tests.
 */

/** An event as the HTTP API returns it. */
export interface WireEvent {
  seq: number;
  type: string;
  at: number;
  data: any;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `read()` until `ok` holds for its value (fails after `timeoutMs`); returns the value. */
export async function eventually<T>(
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  { timeoutMs = 15_000, what = "a condition", intervalMs = 25 } = {},
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (performance.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await sleep(intervalMs);
  }
}

/** The whole log of a session, paged. */
export async function allEvents(id: string, token: string = ADMIN): Promise<WireEvent[]> {
  const out: WireEvent[] = [];
  let after = -1;
  for (;;) {
    const res = await api("GET", `/v1/sessions/${id}/events?after=${after}&limit=500`, { token });
    if (res.status !== 200) throw new Error(`events failed: ${res.status} ${JSON.stringify(res.body)}`);
    out.push(...(res.body.events as WireEvent[]));
    if (res.body.next === null) return out;
    after = res.body.next;
  }
}

/** Waits until `predicate` holds for the session's log (turns run after the 202); returns the log. */
export async function waitForEvents(
  id: string,
  predicate: (events: WireEvent[]) => boolean,
  { timeoutMs = 15_000, what = "the expected events" }: { timeoutMs?: number; what?: string } = {},
): Promise<WireEvent[]> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const events = await allEvents(id);
    if (predicate(events)) return events;
    if (performance.now() > deadline)
      throw new Error(
        `timed out on ${id} waiting for ${what}; log: ${JSON.stringify(events.map((e) => e.type))}`,
      );
    await sleep(20);
  }
}

/** Waits until the log holds `n` `turn/end` events. */
export function waitForTurnEnds(id: string, n: number, timeoutMs?: number): Promise<WireEvent[]> {
  return waitForEvents(id, (es) => count(es, "turn/end") >= n, {
    what: `${n} turn/end`,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}

/** Waits until nothing was appended to the session's log for `quietMs`, then returns the log. */
export async function quiet(id: string, quietMs = 300, timeoutMs = 15_000): Promise<WireEvent[]> {
  const deadline = performance.now() + timeoutMs;
  let last = await allEvents(id);
  let stableSince = performance.now();
  for (;;) {
    await sleep(50);
    const now = await allEvents(id);
    if (now.length !== last.length) {
      last = now;
      stableSince = performance.now();
    } else if (performance.now() - stableSince >= quietMs) return now;
    if (performance.now() > deadline) throw new Error(`${id} never went quiet`);
  }
}

/** Sends a scripted-model message to `id` and waits until the turn it starts has ended; returns the log. */
export async function runScript(id: string, ...steps: unknown[]): Promise<WireEvent[]> {
  const before = count(await allEvents(id), "turn/end");
  await sendMessage(id, script(...steps));
  return waitForEvents(id, (l) => count(l, "turn/end") > before);
}

// ---- picking events out of a log ----

export function ofType(log: readonly WireEvent[], type: string): WireEvent[] {
  return log.filter((e) => e.type === type);
}

export function count(log: readonly WireEvent[], type: string): number {
  return ofType(log, type).length;
}

/** The text of a content array (text blocks joined). */
export function textOf(content: unknown): string {
  return Array.isArray(content) ? content.map((b: { text?: string }) => b.text ?? "").join("") : "";
}

export function assistantTexts(log: readonly WireEvent[]): string[] {
  return ofType(log, "assistant/message").map((e) => textOf(e.data.content));
}

export function userTexts(log: readonly WireEvent[]): string[] {
  return ofType(log, "user/message").map((e) => textOf(e.data.content));
}

export function turnReasons(log: readonly WireEvent[]): string[] {
  return ofType(log, "turn/end").map((e) => String(e.data.reason));
}

/** Every turn end as `{reason, cause?}`. */
export function turnEndCauses(log: readonly WireEvent[]): { reason: string; cause?: string }[] {
  return ofType(log, "turn/end").map((e) => ({
    reason: e.data.reason,
    ...(e.data.cause === undefined ? {} : { cause: e.data.cause }),
  }));
}

/** The delegation lifecycle events of a log (`subagent/start`, `subagent/end`, descriptors). */
export function lifecycleEvents(log: readonly WireEvent[]): WireEvent[] {
  return log.filter((e) => e.type.startsWith("subagent/"));
}

/** `agent/inbox/inserted` events whose source is of `kind`. */
export function insertedOf(log: readonly WireEvent[], kind: string): WireEvent[] {
  return ofType(log, "agent/inbox/inserted").filter((e) => e.data.source.kind === kind);
}

/** `user/message` events whose source is of `kind`. */
export function messagesOf(log: readonly WireEvent[], kind: string): WireEvent[] {
  return ofType(log, "user/message").filter((e) => e.data.source.kind === kind);
}

/** Tool results, optionally of one tool, as `{name, text, isError, toolCallId}`. */
export function toolResults(
  log: readonly WireEvent[],
  name?: string,
): { name: string; text: string; isError: boolean; toolCallId: string }[] {
  return ofType(log, "tool/result")
    .filter((e) => name === undefined || e.data.name === name)
    .map((e) => ({
      name: e.data.name,
      text: textOf(e.data.content),
      isError: e.data.isError,
      toolCallId: e.data.toolCallId,
    }));
}

export function startsFor(log: readonly WireEvent[], childId: string): WireEvent[] {
  return ofType(log, "subagent/start").filter((e) => e.data.id === childId);
}

export function endsFor(log: readonly WireEvent[], childId: string): WireEvent[] {
  return ofType(log, "subagent/end").filter((e) => e.data.id === childId);
}

/** The id of the child the n-th `subagent/start` of a log names. */
export function startedChildId(log: readonly WireEvent[], n = 0): string {
  const start = ofType(log, "subagent/start")[n];
  if (!start) throw new Error(`no subagent/start #${n} in ${JSON.stringify(log.map((e) => e.type))}`);
  return start.data.id;
}

/** Waits for the parent's n-th `subagent/start` and returns the id of the child it names. */
export async function waitForChild(parent: string, n = 0): Promise<string> {
  const log = await waitForEvents(parent, (es) => count(es, "subagent/start") > n, {
    what: `subagent/start #${n}`,
  });
  return startedChildId(log, n);
}

/** Waits until the parent recorded `n` `subagent/end` events for `childId`; returns the parent's log. */
export function settledTimes(
  parent: string,
  childId: string,
  n = 1,
  timeoutMs = 15_000,
): Promise<WireEvent[]> {
  return waitForEvents(parent, (log) => endsFor(log, childId).length >= n, {
    timeoutMs,
    what: `${n} subagent/end of ${childId}`,
  });
}

/** Whether the parent recorded `subagent/end` for the run. */
export async function hasSettled(parentId: string, runId: string): Promise<boolean> {
  const log = await allEvents(parentId);
  return log.some((e) => e.type === "subagent/end" && e.data.runId === runId);
}

export interface Turn {
  turn: number;
  events: WireEvent[];
}

/**
 * Splits the log into turns (from `turn/start` to its `turn/end`). Throws if turns overlap or a
 * `turn/end` has no open turn: at most one turn is ever open.
 */
export function turnsOf(events: readonly WireEvent[]): Turn[] {
  const turns: Turn[] = [];
  let open: Turn | undefined;
  for (const e of events) {
    if (e.type === "turn/start") {
      if (open) throw new Error(`turn ${String(e.data.turn)} started while turn ${open.turn} was open`);
      open = { turn: Number(e.data.turn), events: [e] };
      continue;
    }
    if (open) open.events.push(e);
    if (e.type === "turn/end") {
      if (!open || Number(e.data.turn) !== open.turn)
        throw new Error(`turn/end without its turn at seq ${e.seq}`);
      turns.push(open);
      open = undefined;
    }
  }
  if (open) turns.push(open);
  return turns;
}

// ---- what a parent reads from its children ----

/** The start of every notice a continuable child's settlement sends (semantics.md §6.6). */
export function who(childId: string): string {
  return `Background subagent ${childId}`;
}

/** The summary line of a completed epoch's notice. */
export function finished(childId: string): string {
  return `${who(childId)} finished and will do no further work unless you send it more.`;
}

// ---- the provider registry's log ----

/** Every event of the provider registry's log (`GET /v1/providers/events`), paged. */
export async function registryEvents(): Promise<WireEvent[]> {
  const out: WireEvent[] = [];
  let after = -1;
  for (;;) {
    const res = await api("GET", `/v1/providers/events?after=${after}&limit=500`);
    expect(res.status).toBe(200);
    out.push(...res.body.events);
    if (res.body.next === null) return out;
    after = res.body.next;
  }
}

// ---- the live event stream ----

/** A client end of a session's event stream that collects every event it receives. */
export interface Subscriber {
  response: Response;
  socket: WebSocket;
  received: WireEvent[];
  closed: boolean;
  waitFor(predicate: (events: WireEvent[]) => boolean, timeoutMs?: number): Promise<WireEvent[]>;
  close(): void;
}

/**
 * Opens a session's event stream and collects what it pushes. With `accept: false` the socket is
 * not accepted (a subscriber that never reads) until the test calls `socket.accept()`.
 */
export async function subscribe(
  id: string,
  options: Parameters<typeof openStream>[1] & { accept?: boolean } = {},
): Promise<Subscriber> {
  const { accept, ...streamOptions } = options;
  const response = await openStream(id, streamOptions);
  expect(response.status).toBe(101);
  const socket = response.webSocket;
  if (!socket) throw new Error("the stream answered without a WebSocket");
  const sub: Subscriber = {
    response,
    socket,
    received: [],
    closed: false,
    async waitFor(predicate, timeoutMs = 10_000) {
      const deadline = performance.now() + timeoutMs;
      while (!predicate(sub.received)) {
        if (performance.now() > deadline) {
          throw new Error(
            `stream timed out; got ${JSON.stringify(sub.received.map((e) => `${e.seq}:${e.type}`))}`,
          );
        }
        await sleep(10);
      }
      return sub.received;
    },
    close() {
      socket.close(1000, "done");
    },
  };
  socket.addEventListener("message", (event) => {
    if (event.data === "pong") return; // a keepalive answer, not an event
    sub.received.push(JSON.parse(String(event.data)) as WireEvent);
  });
  socket.addEventListener("close", () => {
    sub.closed = true;
  });
  if (accept !== false) socket.accept();
  return sub;
}
