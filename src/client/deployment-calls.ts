import { SubagentError } from "./errors";
import type { WebSocketFactory, WebSocketLike } from "./stream";
import { type CallOptions, type FetchLike, Transport } from "./transport";
import type { Health, ProviderEventPage, ProviderInfo, RegisterProviderRequest } from "./types";

/**
 * The first layer of the typed client (client.ts): its connection to the API (the transport,
 * the token, the WebSocket factory its streams open sockets with) and the deployment's own
 * routes, health and providers. The session calls (session-calls.ts) and the delegation calls
 * (client.ts) are built on it; every call goes through `http`, so every failure is a
 * `SubagentError`.
 */

export interface ClientOptions {
  /** Where the API lives, e.g. `http://127.0.0.1:8787` or `location.origin` (no `/v1`). */
  baseUrl: string;
  /** The admin token, or a session token (acts as that session, reads its descendants). */
  token?: string | undefined;
  /** A fetch to use instead of the global one (a service binding, a test harness). */
  fetch?: FetchLike | undefined;
  /** Opens WebSockets for `stream()`; the global `WebSocket` by default. */
  webSocket?: WebSocketFactory | undefined;
  /** Upper bound on one request in ms (default 30 s). */
  timeoutMs?: number | undefined;
}

function defaultWebSocket(url: string, protocols: string[]): WebSocketLike {
  const Ctor = (globalThis as { WebSocket?: new (url: string, protocols: string[]) => WebSocketLike })
    .WebSocket;
  if (!Ctor) throw new SubagentError(0, "NETWORK_ERROR", "no WebSocket here: pass options.webSocket");
  return new Ctor(url, protocols);
}

export class DeploymentCalls {
  /** How every call reaches the API. */
  protected readonly http: Transport;
  /** Opens the sockets of `stream()`. */
  protected readonly webSocket: WebSocketFactory;

  constructor(options: ClientOptions) {
    this.http = new Transport(options);
    this.webSocket = options.webSocket ?? defaultWebSocket;
  }

  get baseUrl(): string {
    return this.http.baseUrl;
  }

  /** The session a session token belongs to (tokens are `<sessionId>.<secret>`); undefined for others. */
  get tokenSession(): string | undefined {
    return sessionOfToken(this.http.token);
  }

  /** `GET /v1/health` (no token needed). */
  health(options?: CallOptions): Promise<Health> {
    return this.http.request("GET", "/v1/health", options);
  }

  // ---- providers ----

  /** `GET /v1/providers`, in registration order. */
  async listProviders(options?: CallOptions): Promise<ProviderInfo[]> {
    const body = await this.http.request<{ providers: ProviderInfo[] }>("GET", "/v1/providers", options);
    return body.providers;
  }

  /** `PUT /v1/providers/:name` (admin). `DUPLICATE_PROVIDER` if the name is taken. */
  putProvider(name: string, body: RegisterProviderRequest, options?: CallOptions): Promise<ProviderInfo> {
    return this.http.request("PUT", `/v1/providers/${id(name)}`, { ...options, body });
  }

  /** `DELETE /v1/providers/:name` (admin). Running children are not revoked. */
  async deleteProvider(name: string, options?: CallOptions): Promise<void> {
    await this.http.request("DELETE", `/v1/providers/${id(name)}`, options);
  }

  /** `GET /v1/providers/events`: provider-added / provider-removed, paged by seq. */
  providerEvents(
    query: { after?: number | undefined; limit?: number | undefined } = {},
    options?: CallOptions,
  ): Promise<ProviderEventPage> {
    return this.http.request("GET", "/v1/providers/events", { ...options, query });
  }

  /** The token's own session, for a method whose session may be left out. */
  protected ownSession(method: string): string {
    const own = this.tokenSession;
    if (own === undefined)
      throw new SubagentError(
        0,
        "INVALID_REQUEST",
        `${method}: name the session (an admin token has none of its own)`,
      );
    return own;
  }
}

/** A path segment: `value` URI-encoded. */
export function id(value: string): string {
  return encodeURIComponent(value);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The session id a session token names (`<sessionId>.<secret>`), or undefined (e.g. the admin token). */
export function sessionOfToken(token: string | undefined): string | undefined {
  const dot = token?.indexOf(".") ?? -1;
  const head = dot > 0 ? token?.slice(0, dot) : undefined;
  return head !== undefined && UUID.test(head) ? head : undefined;
}

/** `object` without its undefined members (the API refuses an explicit null or undefined). */
export function defined<T extends Record<string, unknown>>(object: T): T {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as T;
}
