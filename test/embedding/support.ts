import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import type { EmbeddingEnv } from "./worker";

/**
 * Helpers of the embedding suite: requests to the embedding Worker (its own routes and the API
 * under /agents), sessions, their logs, and the Worker's KV namespace.
 */

export const ADMIN = "test-admin-token";
export const BASE = "/agents";

export const testEnv = env as unknown as EmbeddingEnv;

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

/** A request to the embedding Worker (`path` as is, e.g. `/agents/v1/health`). */
export async function call(
  method: string,
  path: string,
  options: { body?: unknown; token?: string | null; redirect?: "manual" | "follow" } = {},
): Promise<Answer> {
  const headers = new Headers();
  const token = options.token === undefined ? ADMIN : options.token;
  if (token) headers.set("authorization", `Bearer ${token}`);
  if (options.body !== undefined) headers.set("content-type", "application/json");
  const init: RequestInit = { method, headers, redirect: options.redirect ?? "manual" };
  if (options.body !== undefined) init.body = JSON.stringify(options.body);
  const response = await (exports as unknown as { default: Fetcher }).default.fetch(
    new Request(`http://example.com${path}`, init),
  );
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body };
}

export function agents(
  method: string,
  path: string,
  options: Parameters<typeof call>[2] = {},
): Promise<Answer> {
  return call(method, `${BASE}${path}`, options);
}

export async function createSession(
  body: Record<string, unknown> = {},
): Promise<{ id: string; token: string }> {
  const created = await agents("POST", "/v1/sessions", { body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

export interface LogEvent {
  seq: number;
  type: string;
  data: any;
}

export async function events(id: string): Promise<LogEvent[]> {
  const page = await agents("GET", `/v1/sessions/${id}/events?limit=500`);
  expect(page.status).toBe(200);
  return page.body.events;
}

export async function waitFor(
  id: string,
  done: (events: LogEvent[]) => boolean,
  timeoutMs = 15_000,
): Promise<LogEvent[]> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const log = await events(id);
    if (done(log)) return log;
    if (performance.now() > deadline)
      throw new Error(`timed out on ${id}: ${JSON.stringify(log.map((e) => `${e.seq}:${e.type}`))}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Sends one message and waits for the turn it starts (turn `turn`) to end. */
export async function turn(id: string, content: string, turnNumber = 1): Promise<LogEvent[]> {
  const sent = await agents("POST", `/v1/sessions/${id}/messages`, { body: { content } });
  expect(sent.status).toBe(202);
  return waitFor(id, (log) => log.some((e) => e.type === "turn/end" && e.data.turn === turnNumber));
}

export function script(...steps: unknown[]): string {
  return JSON.stringify({ script: steps });
}

export function results(log: readonly LogEvent[]): { name: string; text: string; isError: boolean }[] {
  return log
    .filter((e) => e.type === "tool/result")
    .map((e) => ({
      name: e.data.name,
      text: e.data.content.map((b: { text: string }) => b.text).join(""),
      isError: e.data.isError,
    }));
}
