import { env, exports } from "cloudflare:workers";

export const ADMIN = "test-admin-token";

export interface Api {
  status: number;
  body: any;
}

/** Calls the Worker's HTTP API in-process, as a client would. */
export async function api(
  method: string,
  path: string,
  options: { token?: string | null; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Api> {
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? ADMIN : options.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | null = null;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] ??= "application/json";
  }
  const response = await (exports as any).default.fetch(
    new Request(`http://example.com${path}`, { method, headers, body }),
  );
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

export async function createSession(
  body: Record<string, unknown> = {},
): Promise<{ id: string; token: string }> {
  const res = await api("POST", "/v1/sessions", { body });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function allEvents(id: string, token = ADMIN): Promise<any[]> {
  const out: any[] = [];
  let after = -1;
  for (;;) {
    const res = await api("GET", `/v1/sessions/${id}/events?after=${after}&limit=500`, { token });
    if (res.status !== 200) throw new Error(`events failed: ${res.status}`);
    out.push(...res.body.events);
    if (res.body.next === null) return out;
    after = res.body.next;
  }
}

/** Waits until `predicate` holds for the session's log (the turn runs after the 202). */
export async function waitForEvents(
  id: string,
  predicate: (events: any[]) => boolean,
  timeoutMs = 10_000,
): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await allEvents(id);
    if (predicate(events)) return events;
    if (Date.now() > deadline)
      throw new Error(`timed out; log: ${JSON.stringify(events.map((e) => e.type))}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function assistantTexts(events: any[]): string[] {
  return events
    .filter((e) => e.type === "assistant/message")
    .map((e) => e.data.content.map((b: any) => b.text).join(""));
}

export function sessionStubFor(id: string): DurableObjectStub {
  return env.SESSIONS.get(env.SESSIONS.idFromName(id));
}
