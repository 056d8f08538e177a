import { exports } from "cloudflare:workers";
import { expect } from "vitest";

/**
 * Calls into the Worker under test, as a client or another Worker would: the HTTP API (in-process,
 * through the Worker's own `fetch`), the event stream's upgrade, the delegation routes, and the
 * service-binding entrypoint. Every helper that expects success asserts it; the raw `api` call
 * returns whatever the Worker answered.
 */

/** The deployment's admin token (ADMIN_TOKEN in vitest.config.ts), acting for tenant `default`. */
export const ADMIN = "test-admin-token";
/** The admin token of tenant `acme` (TENANT_TOKENS in vitest.config.ts). */
export const TENANT_ADMIN = "tenant-acme-admin-token";
/** A session id, as the runtime mints them (a UUID, v4 or v8 when placed in a jurisdiction). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export interface ApiResult {
  status: number;
  headers: Headers;
  /** The parsed JSON body (`undefined` for an empty body, the raw text if it is not JSON). */
  body: any;
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

/** The Worker's own `fetch`, in-process. */
export function workerFetch(request: Request): Promise<Response> {
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

/** Sends a request to the Worker and reads its answer. */
export async function fetchWorker(req: Request): Promise<ApiResult> {
  return readResult(await workerFetch(req));
}

/** Reads an answer of the Worker: status, headers and the body (parsed when it is JSON). */
export async function readResult(response: Response): Promise<ApiResult> {
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

/** Options for a raw body sent as `contentType` (JSON by default): text or bytes `body` cannot say. */
export function rawBody(raw: BodyInit, contentType = "application/json"): CallOptions {
  return { raw, headers: { "content-type": contentType } };
}

/** Calls the Worker's HTTP API in-process, as a client would. */
export function api(method: string, path: string, options: CallOptions = {}): Promise<ApiResult> {
  return fetchWorker(request(method, path, options));
}

/** Opens the event stream of a session over a WebSocket; returns the raw upgrade response. */
export function openStream(
  id: string,
  options: { after?: number; token?: string | null; protocols?: string[]; deltas?: boolean } = {},
): Promise<Response> {
  const headers = new Headers({ upgrade: "websocket" });
  const token = options.token === undefined ? ADMIN : options.token;
  if (options.protocols) headers.set("sec-websocket-protocol", options.protocols.join(", "));
  else if (token !== null) headers.set("authorization", `Bearer ${token}`);
  const params = new URLSearchParams();
  if (options.after !== undefined) params.set("after", String(options.after));
  if (options.deltas !== undefined) params.set("deltas", String(options.deltas));
  const query = params.size === 0 ? "" : `?${params}`;
  return workerFetch(new Request(`http://example.com/v1/sessions/${id}/events/stream${query}`, { headers }));
}

/** `value[path[0]][path[1]]...`, or `undefined` where the path leaves the object. */
export function field<T = unknown>(value: unknown, ...path: string[]): T {
  let current: unknown = value;
  for (const key of path) {
    if (current === null || typeof current !== "object") return undefined as T;
    current = (current as Record<string, unknown>)[key];
  }
  return current as T;
}

/** A fresh name (providers are global to a test file's storage, so every test registers its own). */
export function uniqueName(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

/** Expects `res` to be the error envelope with `status` and `code` (and a message matching `message`). */
export function expectError(res: ApiResult, status: number, code: string, message?: RegExp): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  if (message) expect(res.body.error.message).toMatch(message);
}

// ---- sessions ----

export async function createSession(
  body: Record<string, unknown> = {},
): Promise<{ id: string; token: string }> {
  const res = await api("POST", "/v1/sessions", { body });
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
  const res = await api("POST", `/v1/sessions/${id}/messages`, {
    body,
    ...(options.token === undefined ? {} : { token: options.token }),
  });
  expect(res.status, `send: ${JSON.stringify(res.body)}`).toBe(202);
  return field<string>(res.body, "messageId");
}

/** `GET /v1/sessions/:id`, expected to answer 200; returns the view. */
export async function view(id: string, token?: string): Promise<any> {
  const res = await api("GET", `/v1/sessions/${id}`, token === undefined ? {} : { token });
  expect(res.status, `view of ${id}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body;
}

/** A session that was never created answers 404 (with the admin token). */
export async function expectNoSession(id: string): Promise<void> {
  const res = await api("GET", `/v1/sessions/${id}`);
  expect(res.status).toBe(404);
  expect(res.body.error.code).toBe("NOT_FOUND");
}

// ---- the provider registry ----

export function putProvider(name: string, body: Record<string, unknown>, token?: string): Promise<ApiResult> {
  return api("PUT", `/v1/providers/${name}`, token === undefined ? { body } : { body, token });
}

/** The names of the registered providers, in registration order. */
export async function providerNames(): Promise<string[]> {
  const res = await api("GET", "/v1/providers");
  expect(res.status).toBe(200);
  return res.body.providers.map((p: { name: string }) => p.name);
}

// ---- one-shot runs ----

/** `POST /v1/sessions/:id/subagents` in one-shot mode (provider defaults to spawn); any answer. */
export function startRun(parent: string, body: Record<string, unknown>, token?: string): Promise<ApiResult> {
  return api("POST", `/v1/sessions/${parent}/subagents`, {
    body: { provider: "spawn", mode: "one-shot", ...body },
    ...(token === undefined ? {} : { token }),
  });
}

/** Starts a one-shot run and expects `201 {runId, id, local}`. */
export async function startOneShot(
  parent: string,
  body: Record<string, unknown>,
): Promise<{ runId: string; id: string; local: boolean }> {
  const res = await startRun(parent, body);
  expect(res.status, `one-shot start: ${JSON.stringify(res.body)}`).toBe(201);
  return res.body;
}

/** `GET /v1/sessions/:id/runs/:runId`, long-polling up to `waitMs`; returns the run view. */
export async function runOf(parent: string, runId: string, waitMs = 0): Promise<any> {
  return (await api("GET", `/v1/sessions/${parent}/runs/${runId}?wait=${waitMs}`)).body;
}

/** Long-polls a run until it settled (fails after `timeoutMs`); returns the settled run view. */
export async function waitForRun(parent: string, runId: string, timeoutMs = 15_000): Promise<any> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const waitMs = Math.max(0, Math.min(5_000, Math.floor(deadline - performance.now())));
    const res = await api("GET", `/v1/sessions/${parent}/runs/${runId}?wait=${waitMs}`);
    expect(res.status).toBe(200);
    if (res.body.state === "settled") return res.body;
    if (performance.now() >= deadline)
      throw new Error(`run ${runId} did not settle within ${timeoutMs} ms: ${JSON.stringify(res.body)}`);
  }
}

// ---- continuable children ----

/** `POST /v1/sessions/:id/subagents` in continuable mode (provider spawn, label "helper" unless given). */
export function startContinuable(parent: string, body: Record<string, unknown>): Promise<ApiResult> {
  return api("POST", `/v1/sessions/${parent}/subagents`, {
    body: { provider: "spawn", mode: "continuable", label: "helper", ...body },
  });
}

/** Starts a continuable child and expects `202 {childId, messageId}`. */
export async function startChild(
  parent: string,
  body: Record<string, unknown>,
): Promise<{ childId: string; messageId: string }> {
  const res = await startContinuable(parent, body);
  expect(res.status, `continuable start: ${JSON.stringify(res.body)}`).toBe(202);
  return res.body;
}

/** `POST /v1/sessions/:id/subagents/:childId/messages`; any answer. */
export function followup(
  parent: string,
  childId: string,
  content: unknown,
  token?: string,
): Promise<ApiResult> {
  return api("POST", `/v1/sessions/${parent}/subagents/${childId}/messages`, {
    body: { content },
    ...(token === undefined ? {} : { token }),
  });
}

/** Sends a follow-up and expects it to be accepted; returns its message id. */
export async function followupOk(parent: string, childId: string, content: unknown): Promise<string> {
  const res = await followup(parent, childId, content);
  expect(res.status, `follow-up: ${JSON.stringify(res.body)}`).toBe(202);
  return res.body.messageId;
}

export function interruptChild(parent: string, childId: string): Promise<ApiResult> {
  return api("POST", `/v1/sessions/${parent}/subagents/${childId}/interrupt`);
}

/** `POST /v1/sessions/:id/subagents/drain`: every child without `childIds`, else those. */
export function drain(parent: string, childIds?: string[]): Promise<ApiResult> {
  return api("POST", `/v1/sessions/${parent}/subagents/drain`, {
    body: childIds === undefined ? {} : { childIds },
  });
}

// ---- the service-binding entrypoint ----

/** The RPC entrypoint, reached untyped as another Worker's service binding would be. */
export const rpc: any = (exports as any).SubagentsEntrypoint;

/** Runs an RPC call; whether it threw and with which message (RPC keeps only name and message). */
export async function rpcOutcome(run: () => Promise<unknown>): Promise<{ threw: boolean; message: string }> {
  try {
    await run();
    return { threw: false, message: "" };
  } catch (error) {
    return { threw: true, message: String((error as Error)?.message ?? error) };
  }
}

/** The message of the error an RPC call fails with; throws if it does not fail. */
export async function rpcFailure(run: () => Promise<unknown>): Promise<string> {
  const outcome = await rpcOutcome(run);
  if (!outcome.threw) throw new Error("expected the RPC call to fail");
  return outcome.message;
}
