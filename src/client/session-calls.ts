import { sseSocket } from "./sse";
import { DeploymentCalls, defined, id } from "./deployment-calls";
import { EventStream, type StreamOptions } from "./stream";
import type { OtlpTrace } from "./trace";
import type { CallOptions } from "./transport";
import type {
  ApprovalDecision,
  ApprovalScope,
  Content,
  CreatedSession,
  CreateSessionRequest,
  DirectoryEntry,
  EventPage,
  MessageDelivery,
  PendingApproval,
  Schedule,
  SessionEvent,
  SessionPage,
  SessionView,
} from "./types";

/**
 * The typed client's calls on a session (client.ts builds the whole client on them): creating,
 * listing, reading and deleting sessions, their messages and schedules, their log (pages and the
 * reconnecting event stream), their trace, interrupting and compacting them, and their approvals.
 */
export class SessionCalls extends DeploymentCalls {
  /** `POST /v1/sessions` (admin): a top-level session and its token. */
  createSession(body: CreateSessionRequest = {}, options?: CallOptions): Promise<CreatedSession> {
    return this.http.request("POST", "/v1/sessions", { ...options, body });
  }

  /** `GET /v1/sessions` (admin): top-level sessions, newest first; follow `next` as `cursor`. */
  listSessions(
    query: { limit?: number | undefined; cursor?: string | undefined } = {},
    options?: CallOptions,
  ): Promise<SessionPage> {
    return this.http.request("GET", "/v1/sessions", { ...options, query });
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
    return this.http.request("GET", `/v1/sessions/${id(sessionId)}`, options);
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
    return this.http.request("POST", `/v1/sessions/${id(sessionId)}/messages`, { ...options, body });
  }

  /**
   * `DELETE /v1/sessions/:id`: deletes the session and its whole tree (a top-level session needs an
   * admin's client; a descendant, its tree's token too). Every route of every member is 404 after.
   */
  deleteSession(sessionId: string, options?: CallOptions): Promise<{ accepted: true }> {
    return this.http.request("DELETE", `/v1/sessions/${id(sessionId)}`, options);
  }

  /** `GET /v1/sessions/:id/schedules`: the session's recurring schedules, oldest first. */
  async schedules(sessionId: string, options?: CallOptions): Promise<Schedule[]> {
    const path = `/v1/sessions/${id(sessionId)}/schedules`;
    const { schedules } = await this.http.request<{ schedules: Schedule[] }>("GET", path, options);
    return schedules;
  }

  /** `GET /v1/sessions/:id/schedules/:scheduleId`: one schedule or held message, as `schedules` lists it. */
  getSchedule(sessionId: string, scheduleId: string, options?: CallOptions): Promise<Schedule> {
    return this.http.request("GET", `/v1/sessions/${id(sessionId)}/schedules/${id(scheduleId)}`, options);
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
    return this.http.request("POST", `/v1/sessions/${id(sessionId)}/schedules`, {
      ...options,
      body: defined(schedule),
    });
  }

  /** `DELETE /v1/sessions/:id/schedules/:scheduleId`. */
  async unschedule(sessionId: string, scheduleId: string, options?: CallOptions): Promise<void> {
    await this.http.request("DELETE", `/v1/sessions/${id(sessionId)}/schedules/${id(scheduleId)}`, options);
  }

  /** `GET /v1/sessions/:id/events`: one page of the log after `after` (default -1). */
  events(
    sessionId: string,
    query: { after?: number | undefined; limit?: number | undefined } = {},
    options?: CallOptions,
  ): Promise<EventPage> {
    return this.http.request("GET", `/v1/sessions/${id(sessionId)}/events`, { ...options, query });
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
    const base = sse ? this.http.baseUrl : this.http.baseUrl.replace(/^http/i, "ws");
    const token = this.http.token;
    return new EventStream(
      {
        socketUrl: (after) =>
          `${base}/v1/sessions/${id(sessionId)}/events/stream?after=${after}${options.onDelta ? "&deltas=true" : ""}`,
        // over SSE the token goes in the Authorization header, not in subprotocols
        token: sse ? undefined : token,
        socket: sse ? (url) => sseSocket(this.http.rawFetch, url, token) : this.webSocket,
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
    return this.http.request("GET", `/v1/sessions/${id(sessionId)}/trace`, {
      ...call,
      ...(cursor === undefined ? {} : { query: { cursor } }),
    });
  }

  /** `POST /v1/sessions/:id/interrupt`: aborts the open turn. */
  interrupt(sessionId: string, options?: CallOptions): Promise<{ accepted: true }> {
    return this.http.request("POST", `/v1/sessions/${id(sessionId)}/interrupt`, options);
  }

  /**
   * `POST /v1/sessions/:id/compact`: the session compacts its model's view before its next model
   * step (at once if idle, without starting a turn); the log's `context/compacted` event shows it.
   */
  compact(sessionId: string, options?: CallOptions): Promise<{ accepted: true }> {
    return this.http.request("POST", `/v1/sessions/${id(sessionId)}/compact`, { ...options, body: {} });
  }
  /**
   * `GET /v1/sessions/:id/approvals`: the pending approvals of the session and all below it,
   * oldest first (`sessionId` defaults to the token's own session).
   */
  async approvals(sessionId?: string, options?: CallOptions): Promise<PendingApproval[]> {
    const path = `/v1/sessions/${id(sessionId ?? this.ownSession("approvals"))}/approvals`;
    const { approvals } = await this.http.request<{ approvals: PendingApproval[] }>("GET", path, options);
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
    const session = sessionId ?? this.ownSession("decide");
    return this.http.request("POST", `/v1/sessions/${id(session)}/approvals/${id(approvalId)}`, {
      ...call,
      body: {
        decision,
        ...(reason === undefined ? {} : { reason }),
        ...(scope === undefined ? {} : { scope }),
      },
    });
  }
}
