import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { type FaultPlan, type FaultPointName, installFaults } from "../../src/core/faults";

/**
 * Shared helpers of the foundation's "must hold" tests: typed HTTP calls against the Worker,
 * log readers, a hash of every table of a session's SQLite database, fault-plan gates.
 */

export const ADMIN = "test-admin-token";

/** An event as the HTTP API returns it. */
export interface WireEvent {
  seq: number;
  type: string;
  at: number;
  data: Record<string, unknown>;
}

export interface ApiResult {
  status: number;
  headers: Headers;
  /** The parsed JSON body (`undefined` for an empty body, the raw text if it is not JSON). */
  body: unknown;
}

export interface CallOptions {
  /** Bearer token; `null` sends none. Defaults to the admin token. */
  token?: string | null;
  /** A JSON body (serialized, with `content-type: application/json` unless overridden). */
  body?: unknown;
  /** A raw body, sent as is. */
  raw?: BodyInit;
  headers?: Record<string, string>;
}

function workerFetch(request: Request): Promise<Response> {
  const main = exports as unknown as { default: { fetch(request: Request): Promise<Response> } };
  return main.default.fetch(request);
}

/** Builds the request a client would send. */
export function request(method: string, path: string, options: CallOptions = {}): Request {
  const headers = new Headers(options.headers);
  const token = options.token === undefined ? ADMIN : options.token;
  if (token !== null) headers.set("authorization", `Bearer ${token}`);
  let body: BodyInit | null = null;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
  }
  return new Request(`http://example.com${path}`, { method, headers, body });
}

/** Calls the Worker's HTTP API in-process, as a client would. */
export async function call(method: string, path: string, options: CallOptions = {}): Promise<ApiResult> {
  return send(request(method, path, options));
}

export async function send(req: Request): Promise<ApiResult> {
  const response = await workerFetch(req);
  const text = await response.text();
  let body: unknown;
  if (text.length > 0) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: response.status, headers: response.headers, body };
}

/** Opens the event stream of a session over a WebSocket; returns the raw upgrade response. */
export async function openStream(
  id: string,
  options: { after?: number; token?: string | null; protocols?: string[] } = {},
): Promise<Response> {
  const headers = new Headers({ upgrade: "websocket" });
  const token = options.token === undefined ? ADMIN : options.token;
  if (options.protocols) headers.set("sec-websocket-protocol", options.protocols.join(", "));
  else if (token !== null) headers.set("authorization", `Bearer ${token}`);
  const query = options.after === undefined ? "" : `?after=${options.after}`;
  return workerFetch(new Request(`http://example.com/v1/sessions/${id}/events/stream${query}`, { headers }));
}

export function field<T = unknown>(value: unknown, ...path: string[]): T {
  let current: unknown = value;
  for (const key of path) {
    if (current === null || typeof current !== "object") return undefined as T;
    current = (current as Record<string, unknown>)[key];
  }
  return current as T;
}

export async function createSession(
  body: Record<string, unknown> = {},
): Promise<{ id: string; token: string }> {
  const res = await call("POST", "/v1/sessions", { body });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: field<string>(res.body, "id"), token: field<string>(res.body, "token") };
}

/** Posts a message and expects it to be accepted; returns its message id. */
export async function sendMessage(
  id: string,
  content: unknown,
  options: { token?: string; idempotencyKey?: string } = {},
): Promise<string> {
  const body: Record<string, unknown> = { content };
  if (options.idempotencyKey !== undefined) body.idempotencyKey = options.idempotencyKey;
  const res = await call("POST", `/v1/sessions/${id}/messages`, {
    body,
    ...(options.token === undefined ? {} : { token: options.token }),
  });
  if (res.status !== 202) throw new Error(`send failed: ${res.status} ${JSON.stringify(res.body)}`);
  return field<string>(res.body, "messageId");
}

/** A scripted-model message (api.md): the JSON text of `{"script": steps}`. */
export function script(...steps: Record<string, unknown>[]): string {
  return JSON.stringify({ script: steps });
}

export async function allEvents(id: string, token: string = ADMIN): Promise<WireEvent[]> {
  const out: WireEvent[] = [];
  let after = -1;
  for (;;) {
    const res = await call("GET", `/v1/sessions/${id}/events?after=${after}&limit=500`, { token });
    if (res.status !== 200) throw new Error(`events failed: ${res.status} ${JSON.stringify(res.body)}`);
    out.push(...field<WireEvent[]>(res.body, "events"));
    const next = field<number | null>(res.body, "next");
    if (next === null) return out;
    after = next;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits until `predicate` holds for the session's log (turns run after the 202). */
export async function waitForEvents(
  id: string,
  predicate: (events: WireEvent[]) => boolean,
  timeoutMs = 10_000,
): Promise<WireEvent[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await allEvents(id);
    if (predicate(events)) return events;
    if (Date.now() > deadline)
      throw new Error(`timed out; log: ${JSON.stringify(events.map((e) => e.type))}`);
    await sleep(20);
  }
}

export function ofType(events: readonly WireEvent[], type: string): WireEvent[] {
  return events.filter((e) => e.type === type);
}

export function count(events: readonly WireEvent[], type: string): number {
  return ofType(events, type).length;
}

/** Waits until the log holds `n` `turn/end` events. */
export function waitForTurnEnds(id: string, n: number, timeoutMs = 10_000): Promise<WireEvent[]> {
  return waitForEvents(id, (es) => count(es, "turn/end") >= n, timeoutMs);
}

export function textOf(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return content.map((b) => field<string>(b, "text") ?? "").join("");
}

export function assistantTexts(events: readonly WireEvent[]): string[] {
  return ofType(events, "assistant/message").map((e) => textOf(e.data.content));
}

export function turnReasons(events: readonly WireEvent[]): string[] {
  return ofType(events, "turn/end").map((e) => String(e.data.reason));
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

export function sessionStub(id: string): DurableObjectStub {
  return env.SESSIONS.get(env.SESSIONS.idFromName(id));
}

export type Row = Record<string, SqlStorageValue>;

/** Every row of every user table of the session's database, sorted, as one JSON document. */
export async function dumpTables(id: string): Promise<Record<string, Row[]>> {
  return runInDurableObject(sessionStub(id), (_instance: unknown, state: DurableObjectState) => {
    const sql = state.storage.sql;
    const tables = sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .toArray()
      .map((r) => r.name)
      .filter((name) => !name.startsWith("_cf_") && !name.startsWith("sqlite_"));
    const out: Record<string, Row[]> = {};
    for (const name of tables) {
      const rows = sql.exec<Row>(`SELECT * FROM "${name}"`).toArray();
      out[name] = rows
        .map((r) =>
          JSON.stringify(r, (_k, v: unknown) => (v instanceof ArrayBuffer ? [...new Uint8Array(v)] : v)),
        )
        .sort()
        .map((r) => JSON.parse(r) as Row);
    }
    return out;
  });
}

/** SHA-256 over every row of every table of the session's database. */
export async function tablesHash(id: string): Promise<string> {
  const dump = JSON.stringify(await dumpTables(id));
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(dump));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Runs a query inside the session's object. */
export async function sqlRows<T extends Row>(
  id: string,
  query: string,
  ...bindings: SqlStorageValue[]
): Promise<T[]> {
  return runInDurableObject(sessionStub(id), (_instance: unknown, state: DurableObjectState) =>
    state.storage.sql.exec<T>(query, ...bindings).toArray(),
  );
}

export async function alarmOf(id: string): Promise<number | null> {
  return runInDurableObject(sessionStub(id), (_instance: unknown, state: DurableObjectState) =>
    state.storage.getAlarm(),
  );
}

export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
  settled(): boolean;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let done = false;
  const promise = new Promise<T>((r) => {
    resolve = (value) => {
      done = true;
      r(value);
    };
  });
  return { promise, resolve, settled: () => done };
}

/** Installs a fault plan for a session that also records every point it was called at. */
export function faults(
  id: string,
  plan: (point: FaultPointName, hits: readonly FaultPointName[]) => void | Promise<void>,
): { hits: FaultPointName[]; remove: () => void } {
  const hits: FaultPointName[] = [];
  const wrapped: FaultPlan = (point) => {
    hits.push(point);
    return plan(point, hits);
  };
  return { hits, remove: installFaults(id, wrapped) };
}

export function hitsOf(hits: readonly FaultPointName[], point: FaultPointName): number {
  return hits.filter((h) => h === point).length;
}
