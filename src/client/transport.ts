import { errorFromResponse, SubagentError } from "./errors";

/**
 * The HTTP transport: one JSON request with a bearer token, a bounded wait, and every failure
 * turned into a `SubagentError`. Uses only `fetch`, so it runs in browsers, Workers and Node.
 */

/** Anything shaped like the global `fetch` (e.g. a service binding's or `exports.default.fetch`). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface TransportOptions {
  /** Where the API lives, e.g. `http://127.0.0.1:8787` (no trailing `/v1`). */
  baseUrl: string;
  /** The admin token or a session token. */
  token?: string | undefined;
  fetch?: FetchLike | undefined;
  /** Upper bound on one request, in ms (default 30 s; long-polls add their wait). */
  timeoutMs?: number | undefined;
}

export interface CallOptions {
  signal?: AbortSignal | undefined;
  /** Overrides the client's timeout for this call. */
  timeoutMs?: number | undefined;
  /**
   * The caller's span (W3C `traceparent`, `00-<trace id>-<span id>-01`): the work the call starts
   * (a message's turn, a child's first turn) joins the caller's trace (README "Traces").
   */
  traceparent?: string | undefined;
}

type Query = Record<string, string | number | undefined>;

const DEFAULT_TIMEOUT_MS = 30_000;

export class Transport {
  readonly baseUrl: string;
  readonly token: string | undefined;
  readonly #fetch: FetchLike;
  readonly #timeoutMs: number;

  constructor(options: TransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** The fetch this client uses, for a long-lived response (the SSE event stream): no timeout. */
  get rawFetch(): FetchLike {
    return this.#fetch;
  }

  url(path: string, query: Query = {}): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
    const search = params.toString();
    return `${this.baseUrl}${path}${search ? `?${search}` : ""}`;
  }

  /** Sends a request and answers its parsed JSON body (undefined for an empty body, e.g. 204). */
  async request<T>(
    method: string,
    path: string,
    options: CallOptions & { query?: Query; body?: unknown } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (options.traceparent) headers.traceparent = options.traceparent;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["content-type"] = "application/json";
    }
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), timeoutMs);
    const signal = options.signal ? anySignal([options.signal, timeout.signal]) : timeout.signal;
    let response: Response;
    let text: string;
    try {
      const init: RequestInit = { method, headers, signal };
      if (body !== undefined) init.body = body;
      response = await this.#fetch(this.url(path, options.query), init);
      text = await response.text();
    } catch (error) {
      if (options.signal?.aborted)
        throw new SubagentError(0, "ABORTED", "the request was aborted", undefined, error);
      if (timeout.signal.aborted)
        throw new SubagentError(0, "TIMEOUT", `no answer within ${timeoutMs} ms`, undefined, error);
      const detail = error instanceof Error ? error.message : String(error);
      throw new SubagentError(0, "NETWORK_ERROR", `request failed: ${detail}`, undefined, error);
    } finally {
      clearTimeout(timer);
    }
    if (!response.ok) throw errorFromResponse(response.status, text);
    if (!text) return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new SubagentError(response.status, "BAD_RESPONSE", "the answer is not JSON", undefined, error);
    }
  }
}

/** `AbortSignal.any` where it exists, else a small equivalent. */
function anySignal(signals: AbortSignal[]): AbortSignal {
  const native = (AbortSignal as { any?: (s: AbortSignal[]) => AbortSignal }).any;
  if (native) return native.call(AbortSignal, signals);
  const controller = new AbortController();
  for (const s of signals) {
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    s.addEventListener("abort", () => controller.abort(s.reason), { once: true });
  }
  return controller.signal;
}
