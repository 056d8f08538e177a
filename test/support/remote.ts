import { expect } from "vitest";
import { ADMIN, putProvider, workerFetch } from "./api";
import { dumpTables, sqlRows } from "./objects";

/**
 * A loopback "network" for remote delegation tests inside workerd: `fetch` to https://remote.test
 * (the remote deployment) and https://parent.test (this deployment's PUBLIC_URL in
 * vitest.config.ts) is answered by the Worker's own exports, so one Worker plays both
 * deployments. Switches take the remote down, hold or drop callbacks; every call is recorded.
 */

export const REMOTE_URL = "https://remote.test";

export interface Recorded {
  host: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  status: number | "down";
  at: number;
}

export interface RemoteNet {
  calls: Recorded[];
  /** The remote deployment answers nothing (connection refused). */
  remoteDown: boolean;
  /** Callbacks are answered 503 without reaching the parent (the parent must poll). */
  dropCallbacks: boolean;
  /** Calls to lose the answer of: they reach their target, then the caller sees a broken connection. */
  loseAnswer: ((call: Recorded) => boolean) | null;
  restore(): void;
}

export function installRemoteNet(): RemoteNet {
  const real = globalThis.fetch;
  const net: RemoteNet = {
    calls: [],
    remoteDown: false,
    dropCallbacks: false,
    loseAnswer: null,
    restore: () => {
      globalThis.fetch = real;
    },
  };
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    // the URL first: a Request built from `input` would take its body from the call passed on
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.host !== "remote.test" && url.host !== "parent.test") return real(input, init);
    const request = new Request(input, init);
    const body = request.method === "GET" ? "" : await request.text();
    const record: Recorded = {
      host: url.host,
      method: request.method,
      path: `${url.pathname}${url.search}`,
      headers: Object.fromEntries(request.headers),
      body,
      status: "down",
      at: Date.now(),
    };
    net.calls.push(record);
    if (url.host === "remote.test" && net.remoteDown) throw new TypeError("Network connection lost.");
    if (url.host === "parent.test" && net.dropCallbacks) {
      record.status = 503;
      return new Response(JSON.stringify({ error: { code: "OVERLOADED", message: "dropped" } }), {
        status: 503,
      });
    }
    const response = await workerFetch(
      new Request(`http://example.com${record.path}`, {
        method: request.method,
        headers: request.headers,
        ...(request.method === "GET" ? {} : { body }),
      }),
    );
    record.status = response.status;
    if (net.loseAnswer?.(record)) {
      await response.body?.cancel();
      throw new TypeError("Network connection lost.");
    }
    return response;
  }) as typeof fetch;
  return net;
}

/** Registers the remote deployment (the Worker itself) under a fresh name. */
export async function registerRemote(token: string | null = ADMIN): Promise<string> {
  const name = `remote-${crypto.randomUUID().slice(0, 8)}`;
  const res = await putProvider(name, {
    kind: "remote",
    url: REMOTE_URL,
    ...(token === null ? {} : { token }),
  });
  expect(res.status).toBe(201);
  return name;
}

/** The remote session a run created (from the parent's transport row). */
export async function remoteIdOf(parentId: string, runId: string): Promise<string | null> {
  const [row] = await sqlRows<{ remote_id: string | null }>(
    parentId,
    "SELECT remote_id FROM remote_runs WHERE run_id = ?",
    runId,
  );
  return row?.remote_id ?? null;
}

/** The per-run callback secret (only the parent's transport row holds it). */
export async function secretOf(parentId: string, runId: string): Promise<string> {
  const [row] = await sqlRows<{ secret: string }>(
    parentId,
    "SELECT secret FROM remote_runs WHERE run_id = ?",
    runId,
  );
  return row!.secret;
}

/**
 * Asserts no credential appears anywhere in a session's database except where it must live (the
 * token columns of the transport rows, the callback secret of the header).
 */
export async function expectNoCredential(sessionId: string, credentials: readonly string[]): Promise<void> {
  const tables = await dumpTables(sessionId);
  for (const [table, rows] of Object.entries(tables)) {
    const text = JSON.stringify(
      table === "remote_runs" || table === "acp_runs"
        ? rows.map(({ token: _t, secret: _s, ...rest }) => rest)
        : table === "header"
          ? rows.map((r) => ({ ...r, body: withoutCallback(String(r.body)) }))
          : rows,
    );
    for (const credential of credentials) expect(text, `${table} of ${sessionId}`).not.toContain(credential);
  }
}

function withoutCallback(body: string): string {
  const header = JSON.parse(body) as { callback?: unknown };
  delete header.callback;
  return JSON.stringify(header);
}

/** A far-side run's transport row (remote or A2A), without its credentials. */
export interface TransportRow {
  protocol: string;
  phase: string;
  remote_id: string | null;
  attempts: number;
  last_error: string | null;
  polls: number;
}

export async function transportOf(parentId: string, runId: string): Promise<TransportRow> {
  const [row] = await sqlRows<TransportRow & Record<string, never>>(
    parentId,
    "SELECT protocol, phase, remote_id, attempts, last_error, polls FROM remote_runs WHERE run_id = ?",
    runId,
  );
  return row!;
}
