import { sseSocket } from "./sse";
import { SubagentError } from "./errors";
import { EventStream, type StreamOptions, type WebSocketFactory, type WebSocketLike } from "./stream";
import type { OtlpTrace } from "./trace";
import { type CallOptions, type FetchLike, Transport } from "./transport";
import type {
  ApprovalDecision,
  ApprovalScope,
  ChildEntry,
  MessageDelivery,
  Schedule,
  Content,
  CreatedSession,
  CreateSessionRequest,
  DescendantEntry,
  DescendantListing,
  DirectoryEntry,
  EventPage,
  Health,
  OutboxEntry,
  PendingApproval,
  ProviderEventPage,
  ProviderInfo,
  RegisterProviderRequest,
  RunView,
  SessionEvent,
  SessionPage,
  SessionView,
  StartContinuableRequest,
  StartedChild,
  StartedRun,
  StartOneShotRequest,
} from "./types";

/**
 * The typed client of the public HTTP API (docs/api.md): one method per route, every failure a
 * `SubagentError`, and a reconnecting event stream. Needs only `fetch` and `WebSocket`.
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

const MAX_RUN_WAIT_MS = 30_000;

function id(value: string): string {
  return encodeURIComponent(value);
}

function defaultWebSocket(url: string, protocols: string[]): WebSocketLike {
  const Ctor = (globalThis as { WebSocket?: new (url: string, protocols: string[]) => WebSocketLike })
    .WebSocket;
  if (!Ctor) throw new SubagentError(0, "NETWORK_ERROR", "no WebSocket here: pass options.webSocket");
  return new Ctor(url, protocols);
}

export class SubagentsClient {
  readonly #http: Transport;
  readonly #webSocket: WebSocketFactory;

  constructor(options: ClientOptions) {
    this.#http = new Transport(options);
    this.#webSocket = options.webSocket ?? defaultWebSocket;
  }

  get baseUrl(): string {
    return this.#http.baseUrl;
  }

  /** The session a session token belongs to (tokens are `<sessionId>.<secret>`); undefined for others. */
  get tokenSession(): string | undefined {
    return sessionOfToken(this.#http.token);
  }

  /** `GET /v1/health` (no token needed). */
  health(options?: CallOptions): Promise<Health> {
    return this.#http.request("GET", "/v1/health", options);
  }

  // ---- providers ----

  /** `GET /v1/providers`, in registration order. */
  async listProviders(options?: CallOptions): Promise<ProviderInfo[]> {
    const body = await this.#http.request<{ providers: ProviderInfo[] }>("GET", "/v1/providers", options);
    return body.providers;
  }

  /** `PUT /v1/providers/:name` (admin). `DUPLICATE_PROVIDER` if the name is taken. */
  putProvider(name: string, body: RegisterProviderRequest, options?: CallOptions): Promise<ProviderInfo> {
    return this.#http.request("PUT", `/v1/providers/${id(name)}`, { ...options, body });
  }

  /** `DELETE /v1/providers/:name` (admin). Running children are not revoked. */
  async deleteProvider(name: string, options?: CallOptions): Promise<void> {
    await this.#http.request("DELETE", `/v1/providers/${id(name)}`, options);
  }

  /** `GET /v1/providers/events`: provider-added / provider-removed, paged by seq. */
  providerEvents(
    query: { after?: number | undefined; limit?: number | undefined } = {},
    options?: CallOptions,
  ): Promise<ProviderEventPage> {
    return this.#http.request("GET", "/v1/providers/events", { ...options, query });
  }

  // ---- sessions ----

  /** `POST /v1/sessions` (admin): a top-level session and its token. */
  createSession(body: CreateSessionRequest = {}, options?: CallOptions): Promise<CreatedSession> {
    return this.#http.request("POST", "/v1/sessions", { ...options, body });
  }

  /** `GET /v1/sessions` (admin): top-level sessions, newest first; follow `next` as `cursor`. */
  listSessions(
    query: { limit?: number | undefined; cursor?: string | undefined } = {},
    options?: CallOptions,
  ): Promise<SessionPage> {
    return this.#http.request("GET", "/v1/sessions", { ...options, query });
  }

  /** Every top-level session, page by page. */
  async *allSessions(
    options?: CallOptions & { pageSize?: number | undefined },
  ): AsyncGenerator<DirectoryEntry> {
    let cursor: string | undefined;
    do {
      const page = await this.listSessions({ limit: options?.pageSize ?? 100, cursor }, options);
      yield* page.sessions;
      cursor = page.next ?? undefined;
    } while (cursor !== undefined);
  }

  /** `GET /v1/sessions/:id`. */
  getSession(sessionId: string, options?: CallOptions): Promise<SessionView> {
    return this.#http.request("GET", `/v1/sessions/${id(sessionId)}`, options);
  }

  /**
   * `POST /v1/sessions/:id/messages`: accepted into the inbox (the turn runs later). `delivery`
   * steers a running turn (`next-step`) or replaces it (`interrupt`); `notBefore` (epoch ms)
   * holds the message until then.
   */
  sendMessage(
    sessionId: string,
    content: Content,
    extra: {
      idempotencyKey?: string | undefined;
      delivery?: MessageDelivery | undefined;
      notBefore?: number | undefined;
    } & CallOptions = {},
  ): Promise<{ messageId: string }> {
    const { idempotencyKey, delivery, notBefore, ...options } = extra;
    const body = defined({ content, idempotencyKey, delivery, notBefore });
    return this.#http.request("POST", `/v1/sessions/${id(sessionId)}/messages`, { ...options, body });
  }

  /**
   * `DELETE /v1/sessions/:id`: deletes the session and its whole tree (a top-level session needs an
   * admin's client; a descendant, its tree's token too). Every route of every member is 404 after.
   */
  deleteSession(sessionId: string, options?: CallOptions): Promise<{ accepted: true }> {
    return this.#http.request("DELETE", `/v1/sessions/${id(sessionId)}`, options);
  }

  /** `GET /v1/sessions/:id/schedules`: the session's recurring schedules, oldest first. */
  async schedules(sessionId: string, options?: CallOptions): Promise<Schedule[]> {
    const path = `/v1/sessions/${id(sessionId)}/schedules`;
    const { schedules } = await this.#http.request<{ schedules: Schedule[] }>("GET", path, options);
    return schedules;
  }

  /**
   * `POST /v1/sessions/:id/schedules`: `content` delivered as a message at every time of a
   * five-field `cron` in `timezone` (default UTC); resolves the schedule's id and first time.
   */
  schedule(
    sessionId: string,
    schedule: { cron: string; content: Content; timezone?: string | undefined },
    options?: CallOptions,
  ): Promise<{ scheduleId: string; next: number }> {
    return this.#http.request("POST", `/v1/sessions/${id(sessionId)}/schedules`, {
      ...options,
      body: defined(schedule),
    });
  }

  /** `DELETE /v1/sessions/:id/schedules/:scheduleId`. */
  async unschedule(sessionId: string, scheduleId: string, options?: CallOptions): Promise<void> {
    await this.#http.request("DELETE", `/v1/sessions/${id(sessionId)}/schedules/${id(scheduleId)}`, options);
  }

  /** `GET /v1/sessions/:id/events`: one page of the log after `after` (default -1). */
  events(
    sessionId: string,
    query: { after?: number | undefined; limit?: number | undefined } = {},
    options?: CallOptions,
  ): Promise<EventPage> {
    return this.#http.request("GET", `/v1/sessions/${id(sessionId)}/events`, { ...options, query });
  }

  /** The log after `after`, page by page, up to its current end. */
  async *allEvents(
    sessionId: string,
    query: { after?: number | undefined } = {},
    options?: CallOptions,
  ): AsyncGenerator<SessionEvent> {
    let after: number | null = query.after ?? -1;
    while (after !== null) {
      const page: EventPage = await this.events(sessionId, { after, limit: 500 }, options);
      yield* page.events;
      after = page.next;
    }
  }

  /**
   * `GET /v1/sessions/:id/events/stream`: the log from `after`, then live events, as an async
   * iterator that reconnects and resumes from the last seen seq (no gap, no duplicate).
   */
  stream(sessionId: string, options: StreamOptions = {}): EventStream {
    const sse = options.transport === "sse";
    const base = sse ? this.#http.baseUrl : this.#http.baseUrl.replace(/^http/i, "ws");
    const token = this.#http.token;
    return new EventStream(
      {
        socketUrl: (after) =>
          `${base}/v1/sessions/${id(sessionId)}/events/stream?after=${after}${options.onDelta ? "&deltas=true" : ""}`,
        // over SSE the token goes in the Authorization header, not in subprotocols
        token: sse ? undefined : token,
        socket: sse ? (url) => sseSocket(this.#http.rawFetch, url, token) : this.#webSocket,
        page: (after, limit) => this.events(sessionId, { after, limit }),
        probe: () => this.getSession(sessionId),
      },
      options,
    );
  }

  /**
   * `GET /v1/sessions/:id/trace`: the spans of the session and of every local session below it,
   * as OTLP/HTTP JSON (`spansOfTrace` lists them, `attributeOf` reads an attribute), a page of at
   * most 4 MiB; `next`, when there is more, is the `cursor` of the following page.
   */
  trace(sessionId: string, options: CallOptions & { cursor?: string } = {}): Promise<OtlpTrace> {
    const { cursor, ...call } = options;
    return this.#http.request("GET", `/v1/sessions/${id(sessionId)}/trace`, {
      ...call,
      ...(cursor === undefined ? {} : { query: { cursor } }),
    });
  }

  /** `POST /v1/sessions/:id/interrupt`: aborts the open turn. */
  interrupt(sessionId: string, options?: CallOptions): Promise<{ accepted: true }> {
    return this.#http.request("POST", `/v1/sessions/${id(sessionId)}/interrupt`, options);
  }

  /**
   * `POST /v1/sessions/:id/compact`: the session compacts its model's view before its next model
   * step (at once if idle, without starting a turn); the log's `context/compacted` event shows it.
   */
  compact(sessionId: string, options?: CallOptions): Promise<{ accepted: true }> {
    return this.#http.request("POST", `/v1/sessions/${id(sessionId)}/compact`, { ...options, body: {} });
  }
  /**
   * `GET /v1/sessions/:id/approvals`: the pending approvals of the session and all below it,
   * oldest first (`sessionId` defaults to the token's own session).
   */
  async approvals(sessionId?: string, options?: CallOptions): Promise<PendingApproval[]> {
    const path = `/v1/sessions/${id(sessionId ?? this.#ownSession("approvals"))}/approvals`;
    const { approvals } = await this.#http.request<{ approvals: PendingApproval[] }>("GET", path, options);
    return approvals;
  }

  /**
   * `POST /v1/sessions/:id/approvals/:approvalId`: approve or deny a call that waits (the same
   * decision again answers the same; the other is `ALREADY_DECIDED`). The path is the token's own
   * session unless `options.sessionId` names the one that asked or an ancestor of it (an admin's
   * client must name one). `options.scope` (default `once`): how far an approve reaches; one the
   * approval does not offer (its `scopes`) is `SCOPE_NOT_OFFERED` and decides nothing.
   */
  async decide(
    approvalId: string,
    decision: ApprovalDecision,
    reason?: string,
    options?: CallOptions & { sessionId?: string; scope?: ApprovalScope },
  ): Promise<{ approvalId: string; decision: ApprovalDecision }> {
    const { sessionId, scope, ...call } = options ?? {};
    const session = sessionId ?? this.#ownSession("decide");
    return this.#http.request("POST", `/v1/sessions/${id(session)}/approvals/${id(approvalId)}`, {
      ...call,
      body: {
        decision,
        ...(reason === undefined ? {} : { reason }),
        ...(scope === undefined ? {} : { scope }),
      },
    });
  }

  /** The token's own session, for a method whose session may be left out. */
  #ownSession(method: string): string {
    const own = this.tokenSession;
    if (own === undefined)
      throw new SubagentError(
        0,
        "INVALID_REQUEST",
        `${method}: name the session (an admin token has none of its own)`,
      );
    return own;
  }

  // ---- delegation ----

  /** `POST /v1/sessions/:id/subagents` with mode one-shot: a run with exactly one result. */
  startOneShot(parentId: string, request: StartOneShotRequest, options?: CallOptions): Promise<StartedRun> {
    const body = { ...request, mode: "one-shot" };
    return this.#http.request("POST", `/v1/sessions/${id(parentId)}/subagents`, { ...options, body });
  }

  /** `POST /v1/sessions/:id/subagents` with mode continuable: a child that takes follow-ups. */
  startContinuable(
    parentId: string,
    request: StartContinuableRequest,
    options?: CallOptions,
  ): Promise<StartedChild> {
    const body = { ...request, mode: "continuable" };
    return this.#http.request("POST", `/v1/sessions/${id(parentId)}/subagents`, { ...options, body });
  }

  /** `GET /v1/sessions/:id/runs/:runId`, long-polling up to `wait` ms (<= 30000) for settlement. */
  getRun(
    parentId: string,
    runId: string,
    query: { wait?: number | undefined } = {},
    options?: CallOptions,
  ): Promise<RunView> {
    const wait = query.wait === undefined ? undefined : Math.max(0, Math.min(MAX_RUN_WAIT_MS, query.wait));
    return this.#http.request("GET", `/v1/sessions/${id(parentId)}/runs/${id(runId)}`, {
      ...options,
      query: { wait },
      timeoutMs: (options?.timeoutMs ?? 30_000) + (wait ?? 0),
    });
  }

  /** Long-polls a run until it settles (or `timeoutMs`, default unbounded, passes: `TIMEOUT`). */
  async waitForRun(parentId: string, runId: string, options: CallOptions = {}): Promise<RunView> {
    const deadline =
      options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw new SubagentError(0, "TIMEOUT", `run ${runId} did not settle in time`);
      const view = await this.getRun(
        parentId,
        runId,
        { wait: Math.min(MAX_RUN_WAIT_MS, left) },
        { signal: options.signal },
      );
      if (view.state === "settled") return view;
    }
  }

  /** `DELETE /v1/sessions/:id/runs/:runId`: dispose (cancel, then quiesce in the background). */
  async disposeRun(parentId: string, runId: string, options?: CallOptions): Promise<void> {
    await this.#http.request("DELETE", `/v1/sessions/${id(parentId)}/runs/${id(runId)}`, options);
  }

  /**
   * `POST /v1/sessions/:id/subagents/:childId/messages`: a follow-up (cold-resumes a settled
   * child); `delivery` as for `sendMessage`.
   */
  followUp(
    parentId: string,
    childId: string,
    content: Content,
    options?: CallOptions & { delivery?: MessageDelivery | undefined },
  ): Promise<{ messageId: string }> {
    const { delivery, ...rest } = options ?? {};
    return this.#http.request("POST", `/v1/sessions/${id(parentId)}/subagents/${id(childId)}/messages`, {
      ...rest,
      body: defined({ content, delivery }),
    });
  }

  /** `POST /v1/sessions/:id/subagents/:childId/interrupt`: the parent interrupts its child. */
  interruptChild(parentId: string, childId: string, options?: CallOptions): Promise<{ accepted: true }> {
    return this.#http.request(
      "POST",
      `/v1/sessions/${id(parentId)}/subagents/${id(childId)}/interrupt`,
      options,
    );
  }

  /** `POST /v1/sessions/:id/subagents/drain`: settles the given children (all descendants if absent). */
  async drain(parentId: string, childIds?: string[], options?: CallOptions): Promise<string[]> {
    const body = childIds === undefined ? {} : { childIds };
    const answer = await this.#http.request<{ drained: string[] }>(
      "POST",
      `/v1/sessions/${id(parentId)}/subagents/drain`,
      { ...options, body },
    );
    return answer.drained;
  }

  /** `GET /v1/sessions/:id/children`: child rows and diagnostics. */
  async children(sessionId: string, options?: CallOptions): Promise<ChildEntry[]> {
    const body = await this.#http.request<{ entries: ChildEntry[] }>(
      "GET",
      `/v1/sessions/${id(sessionId)}/children`,
      options,
    );
    return body.entries;
  }

  /** `GET /v1/sessions/:id/descendants`: every descendant in stable pre-order, with parent and depth. */
  async descendants(sessionId: string, options?: CallOptions): Promise<DescendantEntry[]> {
    const body = await this.#http.request<{ entries: DescendantEntry[] }>(
      "GET",
      `/v1/sessions/${id(sessionId)}/descendants`,
      options,
    );
    return body.entries;
  }

  /** `GET /v1/sessions/:id/descendants` as a whole: the rows and the tree's total usage (`subtreeUsage`). */
  descendantListing(sessionId: string, options?: CallOptions): Promise<DescendantListing> {
    return this.#http.request<DescendantListing>("GET", `/v1/sessions/${id(sessionId)}/descendants`, options);
  }

  /** `GET /v1/sessions/:id/outbox`: what this session sent or is sending to others, dead letters included. */
  async outbox(sessionId: string, options?: CallOptions): Promise<OutboxEntry[]> {
    const body = await this.#http.request<{ entries: OutboxEntry[] }>(
      "GET",
      `/v1/sessions/${id(sessionId)}/outbox`,
      options,
    );
    return body.entries;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The session id a session token names (`<sessionId>.<secret>`), or undefined (e.g. the admin token). */
export function sessionOfToken(token: string | undefined): string | undefined {
  const dot = token?.indexOf(".") ?? -1;
  const head = dot > 0 ? token?.slice(0, dot) : undefined;
  return head !== undefined && UUID.test(head) ? head : undefined;
}

/** `object` without its undefined members (the API refuses an explicit null or undefined). */
function defined<T extends Record<string, unknown>>(object: T): T {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as T;
}
