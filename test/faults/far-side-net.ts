import { workerFetch } from "../support/api";
import type { Fired } from "./harness";
import { sleep } from "./harness";
import type { FarFault, FarPoint, NetRule } from "./far-side-plan";

/**
 * The faulty network between the parent and its far sides: it wraps `fetch` (the loopback remote
 * deployment, the ACP agent, the MCP server, the session's MCP face) and applies the seed's
 * network rules to the calls of each path. Every fault that fires is recorded twice: as a
 * `Fired` for the campaign's figures, and as a `FarFault` (path, request, time) for the checker.
 */

/** How much of a faulted request's body is kept to tell which run or call it belonged to. */
const DETAIL_CHARS = 2_000;

/** Which path a call of the parent (or of the far side's callbacks) travels, if any. */
export function pointOf(url: URL, mcpHost: string): FarPoint | undefined {
  if (url.hostname.endsWith("acp.test")) return "acp-connect";
  if (url.host === "face.test") return "mcp-face";
  if (url.host === mcpHost) return "mcp-call";
  if (url.pathname.startsWith("/v1/callbacks/")) return "callback";
  if (url.pathname.startsWith("/v1/a2a") || url.pathname.includes("agent-card.json")) return "a2a-call";
  if (url.host === "remote.test") return "remote-call";
  return undefined;
}

async function detailOf(request: Request, url: URL): Promise<string> {
  const head = `${request.method} ${url.pathname}${url.search}`;
  if (request.method === "GET" || request.method === "HEAD" || request.body === null) return head;
  const body = await request
    .clone()
    .text()
    .catch(() => "");
  return `${head} ${body.slice(0, DETAIL_CHARS)}`;
}

export class FaultyNet {
  readonly fired: Fired[] = [];
  readonly faults: FarFault[] = [];
  readonly hits: Record<string, number> = {};
  #rules: NetRule[] = [];
  readonly #state = new Map<NetRule, { seen: number; done: number }>();
  readonly #inner: typeof fetch;
  readonly #mcpHost: string;

  constructor(mcpUrl: string) {
    this.#inner = globalThis.fetch;
    this.#mcpHost = new URL(mcpUrl).host;
    globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) =>
      this.#fetch(new Request(input, init))) as typeof fetch;
  }

  arm(rules: NetRule[]): void {
    this.#rules = rules;
    this.#state.clear();
    this.fired.length = 0;
    this.faults.length = 0;
    for (const key of Object.keys(this.hits)) delete this.hits[key];
  }

  /** A call past the faults (the campaign's own reads of the far sides). */
  direct(url: string): Promise<Response> {
    return this.#inner(url);
  }

  restore(): void {
    globalThis.fetch = this.#inner;
  }

  async #fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const point = pointOf(url, this.#mcpHost);
    if (point === undefined) return this.#inner(request);
    // face.test is this Worker's MCP server face, reached by the campaign's MCP client
    const onward = (r: Request) =>
      point === "mcp-face"
        ? workerFetch(new Request(`http://example.com${url.pathname}${url.search}`, r))
        : this.#inner(r);
    this.hits[point] = (this.hits[point] ?? 0) + 1;
    const rule = this.#take(point);
    if (!rule) return onward(request);
    // both clocks read as the fault fires, before the request's body is read
    const at = performance.now();
    const clock = Date.now();
    this.fired.push({ kind: `net-${rule.kind}` as Fired["kind"], point, scope: point });
    this.faults.push({ kind: rule.kind, point, at, clock, detail: await detailOf(request, url) });
    switch (rule.kind) {
      case "down":
        throw new TypeError("Network connection lost.");
      case "overloaded":
        return new Response(JSON.stringify({ error: { code: "OVERLOADED", message: "injected" } }), {
          status: 503,
          headers: { "content-type": "application/json" },
        });
      case "delay":
        await sleep(rule.ms ?? 20);
        return onward(request);
      case "lose-answer": {
        const response = await onward(request);
        await response.body?.cancel();
        throw new TypeError("Network connection lost.");
      }
    }
  }

  #take(point: FarPoint): NetRule | undefined {
    for (const rule of this.#rules) {
      if (rule.point !== point) continue;
      const state = this.#state.get(rule) ?? { seen: 0, done: 0 };
      this.#state.set(rule, state);
      state.seen++;
      if (state.seen <= rule.after || state.done >= rule.times) continue;
      state.done++;
      return rule;
    }
    return undefined;
  }
}
