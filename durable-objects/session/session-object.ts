import type { ChildInit } from "../../src/contract/child-init";
import type { WireContent } from "../../src/contract/content";
import type { CreateSchedule, MessageDelivery, Schedule } from "../../src/contract/control";
import type {
  ContinuableInit,
  ContinuableStart,
  FollowupInput,
  InterruptAuthority,
} from "../../src/contract/continuable";
import type { Envelope } from "../../src/contract/envelope";
import { fail, ok, type Outcome } from "../../src/contract/errors";
import type { ChildEntry, DescendantListing } from "../../src/contract/listing";
import type { ProviderScope } from "../../src/contract/provider";
import { failure } from "../../src/contract/respond";
import type { RunView, StartedRun, StartRequest } from "../../src/contract/run";
import { CALLER_HEADER, type Caller, type SessionHeader, type SessionView } from "../../src/contract/session";
import type { ApprovalDecision, ApprovalScope } from "../../src/contract/events";
import type {
  BudgetAnswer,
  BudgetDraw,
  CreateSession,
  EventPage,
  EventTextRead,
  OutboxEntry,
  PendingApproval,
  SendInput,
  SessionRpc,
} from "../../src/contract/session-api";
import { isEventTextRead, MAX_TEXT_READ_SEQS } from "../../src/contract/session-api";
import { checkAccess, type Need } from "../../src/core/access";
import { compact } from "../../src/core/compact";
import { loadCron } from "../../src/core/cron";
import { publicEntry } from "../../src/core/descendants";
import { faultPoint } from "../../src/core/faults";
import { quote } from "../../src/core/quote";
import type { Deployment } from "../../src/platform/deployment";
import { sessionStub } from "../../src/platform/stubs";
import { scopeOf } from "../../src/providers/provider-access";
import { reserveTreeSlot, takeTreeSlot } from "../delegation/child-spec";
import { applyCallback, type CallbackInput } from "../messaging/remote-callbacks";
import { migrate, tablesIn } from "../store/schema";
import { admitUserMessage } from "./admission";
import { offeredScopes } from "./approvals";
import { createSession } from "./creation";
import { childEntriesOf, descendantListing } from "./discovery";
import { assembleParts, type Parts } from "./session-parts";
import { listingEntry, pendingApproval, sessionView } from "./session-view";
import { subscriberCap } from "./subscribers";
import { TRACE_PAGE_SPAN_BYTES, treeSpanPage } from "./trace";
import { DEFAULT_SERVICE_NAME, otlpTracesOf } from "../../src/trace/otlp";
import { formatTraceCursor } from "../../src/trace/trace-cursor";
import type { TraceCursor, TracePage, TreeSpanPage } from "../../src/contract/trace";
import type { TraceContext } from "../../src/contract/trace";

/**
 * A page of `GET …/events` holds at most this much event data past its first event (`next` goes
 * on from there): 500 rows of 512 KiB would not fit an object's 128 MB.
 */
const EVENTS_PAGE_BYTES = 4 * 1024 * 1024;

/** After this many platform retries of a failing alarm, the alarm re-arms itself instead of throwing. */
const ALARM_RETRIES_BEFORE_SELF_REARM = 4;
const SELF_REARM_MS = 30_000;
/** The longest an `events` read waits for the next event (a long poll answers within a minute). */
const MAX_EVENTS_WAIT_MS = 60_000;

/**
 * One session: header, append-only log, inbox, turn loop, runs, children and outbox, in its own
 * SQLite database. A thin shell: it authorizes each RPC call and hands it to a part or a function
 * over the session context (session-parts.ts assembles them); storage lives in the stores,
 * decisions in `src/` and in the parts, and the drive loop (drive-loop.ts) runs their work.
 * Accepted work starts in-process at once (no alarm round trip); the alarm is the safety net and
 * the retry clock. A session being deleted (session/deletion.ts) answers every route 404. The
 * Durable Object class a Worker exports forwards every call here (src/worker/object-shells.ts).
 */
export class SessionObject implements SessionRpc {
  protected readonly ctx: DurableObjectState;
  protected readonly env: Env;
  #parts: Parts | undefined;
  /** Erased by a deletion: nothing is created in this object again by this instance. */
  #erased = false;
  readonly #deployment: Deployment;
  /** The object's tables when this instance started (none: the first `#open` creates the schema). */
  readonly #tables: ReadonlySet<string>;

  /**
   * The object's implementation, built by the class `createSubagents` exports (src/worker/) before
   * the instance's first event, with the deployment's tools and models: a session that exists
   * arms the work it owes (a restart's) before any call runs. An object that was never created
   * stays empty: probing unknown ids stores nothing.
   */
  static async open(ctx: DurableObjectState, env: Env, deployment: Deployment): Promise<SessionObject> {
    const session = new SessionObject(ctx, env, deployment);
    if (session.#tables.has("meta")) await session.#open().loop.armIfOwed();
    return session;
  }

  private constructor(ctx: DurableObjectState, env: Env, deployment: Deployment) {
    this.ctx = ctx;
    this.env = env;
    this.#deployment = deployment;
    this.#tables = tablesIn(ctx.storage.sql);
  }

  // ---- RPC surface: the registry Worker (every call carries the authenticated caller) ----

  create(input: CreateSession): Outcome<{ view: SessionView; replayed: boolean }> {
    const { stores, ctx } = this.#open();
    const created = createSession(stores, input);
    return created.ok
      ? ok({ view: sessionView(ctx, created.value.header), replayed: created.value.replayed })
      : created;
  }

  describe(caller: Caller): Outcome<SessionView> {
    const session = this.#authorize(caller, "read");
    return session.ok ? ok(sessionView(session.value.parts.ctx, session.value.header)) : session;
  }

  /** The providers this session may use (its tenant, its `providers` option), for its token's listings. */
  providerScope(caller: Caller): Outcome<ProviderScope> {
    const session = this.#authorize(caller, "read");
    return session.ok ? ok(scopeOf(session.value.header)) : session;
  }

  send(caller: Caller, input: SendInput): Outcome<{ messageId: string }> {
    const session = this.#authorize(caller, "act");
    if (!session.ok) return session;
    const { parts } = session.value;
    const { notBefore, ...message } = input;
    // a time ahead: the message waits with the schedules (a time past is delivered at once)
    if (notBefore !== undefined && notBefore > Date.now())
      return parts.schedules.defer({
        content: message.content,
        at: notBefore,
        delivery: message.delivery ?? "next-turn",
        source: { kind: "user", ...compact({ trace: message.trace }) },
        by: "caller",
        ...compact({ idempotencyKey: message.idempotencyKey }),
      });
    return admitUserMessage(parts.ctx, message);
  }

  schedules(caller: Caller): Outcome<{ schedules: Schedule[] }> {
    const session = this.#authorize(caller, "read");
    return session.ok ? ok({ schedules: session.value.parts.schedules.list() }) : session;
  }

  async createSchedule(
    caller: Caller,
    body: CreateSchedule,
  ): Promise<Outcome<{ scheduleId: string; next: number }>> {
    await loadCron(); // before anything is read: the rest runs without a pause
    const session = this.#authorize(caller, "act");
    return session.ok ? session.value.parts.schedules.create(body, "caller") : session;
  }

  /** The session itself (its token, an admin) or whoever may delete it (a token of its tree above it). */
  deleteSchedule(caller: Caller, scheduleId: string): Outcome<void> {
    const acting = this.#authorize(caller, "act");
    const session = !acting.ok && acting.code === "UNAUTHORIZED" ? this.#authorize(caller, "delete") : acting;
    if (!session.ok) return session;
    const by =
      caller.kind === "admin"
        ? "admin"
        : caller.sessionId === session.value.header.id
          ? "the session's token"
          : `the token of ${caller.sessionId}`;
    return session.value.parts.schedules.remove(scheduleId, `deleted by ${by}`);
  }

  /**
   * A page of the log after `query.after`; with `waitMs`, an empty page waits (up to that long,
   * at most 60 s) for the next committed event first: a long poll.
   */
  async events(
    caller: Caller,
    query: { after: number; limit: number; maxBytes?: number; text?: EventTextRead },
    waitMs = 0,
  ): Promise<Outcome<EventPage>> {
    const session = this.#authorize(caller, "read");
    if (!session.ok) return session;
    const text = query.text;
    if (text !== undefined && !isEventTextRead(text))
      return fail(
        "INVALID_REQUEST",
        `text: { leave: true } or { only: [seq, …] } (at most ${MAX_TEXT_READ_SEQS})`,
      );
    const { stores, subscribers } = session.value.parts;
    await subscribers.waitAfter(query.after, Math.min(Math.max(0, waitMs), MAX_EVENTS_WAIT_MS));
    const maxBytes = Math.min(EVENTS_PAGE_BYTES, query.maxBytes ?? EVENTS_PAGE_BYTES);
    if (text !== undefined) return ok(stores.log.textPageAfter(query.after, query.limit, maxBytes, text));
    return ok(stores.log.pageAfter(query.after, query.limit, maxBytes));
  }

  interrupt(caller: Caller): Outcome<{ accepted: true }> {
    const session = this.#authorize(caller, "act");
    if (!session.ok) return session;
    const { ctx } = session.value.parts;
    ctx.turns.interrupt("user");
    ctx.kick(); // foreground children of the aborted turn get their cancel
    return ok({ accepted: true });
  }

  /**
   * `GET /v1/sessions/:id/trace`: a page of the spans of the session and its local descendants,
   * OTLP JSON of at most 4 MiB, and where the next page starts when there is one (`next`).
   */
  async otlpTrace(caller: Caller, cursor?: TraceCursor): Promise<Outcome<TracePage>> {
    const session = this.#authorize(caller, "read");
    if (!session.ok) return session;
    const page = await treeSpanPage(session.value.parts.ctx, cursor, TRACE_PAGE_SPAN_BYTES, true);
    const traces = otlpTracesOf(page.spans, this.env.OTEL_SERVICE_NAME || DEFAULT_SERVICE_NAME);
    return ok(page.next ? { ...traces, next: formatTraceCursor(page.next) } : traces);
  }

  /**
   * `DELETE /v1/sessions/:id`: the session and every local descendant answer 404 from the answer
   * on; each stops its work and erases itself in the background (session/deletion.ts).
   */
  async deleteTree(caller: Caller): Promise<Outcome<{ accepted: true }>> {
    const session = this.#authorize(caller, "delete");
    if (!session.ok) return session;
    await session.value.parts.deletion.mark("caller");
    return ok({ accepted: true });
  }

  compact(caller: Caller): Outcome<{ accepted: true }> {
    const session = this.#authorize(caller, "oversee");
    if (!session.ok) return session;
    const { ctx } = session.value.parts;
    ctx.stores.transact(() => ctx.stores.compaction.request());
    ctx.kick();
    return ok({ accepted: true });
  }

  approvals(caller: Caller): Outcome<{ approvals: PendingApproval[] }> {
    const session = this.#authorize(caller, "read");
    if (!session.ok) return session;
    return ok({ approvals: session.value.parts.stores.approvals.pending().map(pendingApproval) });
  }

  async decideApproval(
    caller: Caller,
    approvalId: string,
    decision: { decision: ApprovalDecision; reason?: string; scope?: ApprovalScope },
  ): Promise<Outcome<{ approvalId: string; decision: ApprovalDecision }>> {
    const session = this.#authorize(caller, "oversee");
    if (!session.ok) return session;
    const { header, parts } = session.value;
    // only approvals of this session's subtree: a child's path can neither see nor decide its parent's
    const row = parts.stores.approvals.get(approvalId);
    if (!row) return fail("NOT_FOUND", `no approval ${approvalId} in this session's subtree`);
    const by = caller.kind === "admin" ? "admin" : header.id;
    if (row.sessionId === header.id) return this.decideAsked(approvalId, decision, by);
    return sessionStub(this.env, row.sessionId).decideAsked(approvalId, decision, by);
  }

  decideAsked(
    approvalId: string,
    { decision, reason, scope }: { decision: ApprovalDecision; reason?: string; scope?: ApprovalScope },
    by: string,
  ): Outcome<{ approvalId: string; decision: ApprovalDecision }> {
    const parts = this.#parts;
    if (!parts) return fail("NOT_FOUND", `no approval ${approvalId}`);
    const outcome = parts.approvals.decide(approvalId, decision, reason, by, undefined, scope);
    if (outcome === "unknown") return fail("NOT_FOUND", `no approval ${approvalId}`);
    if (outcome === "unoffered") {
      const offered = offeredScopes(parts.stores.approvals.get(approvalId) ?? {});
      return fail(
        "SCOPE_NOT_OFFERED",
        `approval ${approvalId} cannot be approved with scope ${scope ?? "once"}: it offers ${
          offered.length === 0 ? "no approve, only deny" : `scope ${offered.join(" or ")} only`
        }; nothing was decided`,
      );
    }
    if (outcome === "conflict") {
      const taken = parts.stores.approvals.get(approvalId)?.decision;
      return fail("ALREADY_DECIDED", `approval ${approvalId} was already decided: ${taken}`);
    }
    return ok({ approvalId, decision });
  }

  async startRun(caller: Caller, request: StartRequest, trace?: TraceContext): Promise<Outcome<StartedRun>> {
    const session = this.#authorize(caller, "act");
    if (!session.ok) return session;
    const started = await session.value.parts.runs.start(request, undefined, trace);
    return started.ok
      ? ok({ runId: started.value.runId, id: started.value.id, local: started.value.local })
      : started;
  }

  async runStatus(caller: Caller, runId: string, waitMs: number): Promise<Outcome<RunView>> {
    const session = this.#authorize(caller, "read");
    if (!session.ok) return session;
    const { runs } = session.value.parts;
    const run = await runs.waitFor(runId, waitMs);
    return run ? ok(runs.view(run)) : fail("NOT_FOUND", `no run ${quote(runId)}`);
  }

  disposeRun(caller: Caller, runId: string): Outcome<{ accepted: true }> {
    const session = this.#authorize(caller, "act");
    return session.ok ? session.value.parts.runs.dispose(runId) : session;
  }

  async startContinuable(
    caller: Caller,
    spec: ContinuableStart,
    trace?: TraceContext,
  ): Promise<Outcome<{ childId: string; messageId: string }>> {
    const session = this.#authorize(caller, "act");
    return session.ok ? session.value.parts.children.start(spec, undefined, trace) : session;
  }

  async followupChild(
    caller: Caller,
    childId: string,
    content: WireContent,
    delivery?: MessageDelivery,
    trace?: TraceContext,
  ): Promise<Outcome<{ messageId: string }>> {
    const session = this.#authorize(caller, "act");
    return session.ok
      ? session.value.parts.children.followup(
          childId,
          content,
          { kind: "user", ...compact({ trace }) },
          compact({ delivery }),
        )
      : session;
  }

  async interruptChild(caller: Caller, childId: string): Promise<Outcome<{ accepted: true }>> {
    const session = this.#authorize(caller, "act");
    if (!session.ok) return session;
    const { parts, header } = session.value;
    return parts.children.interrupt(childId, { kind: "user", parentSessionId: header.id });
  }

  async drainChildren(caller: Caller, childIds?: string[]): Promise<Outcome<{ drained: string[] }>> {
    const session = this.#authorize(caller, "act");
    return session.ok ? session.value.parts.drains.drain(childIds) : session;
  }

  async listChildren(caller: Caller): Promise<Outcome<{ entries: ChildEntry[] }>> {
    const session = this.#authorize(caller, "read");
    return session.ok
      ? ok({ entries: (await childEntriesOf(session.value.parts.ctx)).map(publicEntry) })
      : session;
  }

  async listDescendants(caller: Caller): Promise<Outcome<DescendantListing>> {
    const session = this.#authorize(caller, "read");
    return session.ok ? ok(await descendantListing(session.value.parts.ctx)) : session;
  }

  outbox(caller: Caller): Outcome<{ entries: OutboxEntry[] }> {
    const session = this.#authorize(caller, "read");
    return session.ok ? ok({ entries: session.value.parts.stores.outbox.list() }) : session;
  }

  /** A signed callback from another deployment with a remote run's result (remote-callbacks.ts). */
  async remoteCallback(runId: string, input: CallbackInput): Promise<Outcome<{ applied: true }>> {
    const parts = this.#parts;
    if (!parts) return fail("NOT_FOUND", "no such run"); // never created: nothing to apply to
    return applyCallback(parts.ctx, parts.remote, runId, input);
  }

  // ---- RPC surface: other session objects (never reachable over HTTP) ----

  async init(spec: ChildInit): Promise<Outcome<{ id: string }>> {
    if (this.#erased) return fail("NOT_FOUND", "this session was deleted");
    const slot = await this.#treeSlot(spec);
    return slot.ok ? this.#open().oneShot.init(spec) : slot;
  }

  async initContinuable(spec: ContinuableInit): Promise<Outcome<{ id: string; messageId: string }>> {
    if (this.#erased) return fail("NOT_FOUND", "this session was deleted");
    const slot = await this.#treeSlot(spec);
    return slot.ok ? this.#open().self.init(spec) : slot;
  }

  /** At a tree's root: a slot for a session below one of its descendants (MAX_SESSIONS_PER_TREE). */
  reserveTreeSlot(childId: string): Outcome<void> {
    const parts = this.#parts;
    if (!parts) return fail("NOT_FOUND", "no such session"); // never created: stays empty
    return reserveTreeSlot(parts.ctx, childId);
  }

  async deliver(envelope: Envelope): Promise<Outcome<{ applied: boolean }>> {
    // a cancel may outrun the child's creation (it leaves a tombstone); anything else needs a
    // session, and nothing reaches one that is deleted
    if (this.#erased || this.#parts?.deletion.deleting()) return fail("NOT_FOUND", "no such session");
    if (!this.#parts && envelope.kind !== "cancel-run") return fail("NOT_FOUND", "no such session");
    return this.#open().delivery.deliver(envelope);
  }

  followup(input: FollowupInput): Outcome<{ messageId: string; resumed: boolean }> {
    const parts = this.#parts;
    if (!parts || parts.deletion.deleting())
      return fail("NOT_RESUMABLE", "subagent is unavailable (unknown id); do not retry send_message with it");
    return parts.self.receiveFollowup(input);
  }

  interruptBy(authority: InterruptAuthority): Outcome<{ accepted: true }> {
    return this.#parts ? this.#parts.self.interruptBy(authority) : ok({ accepted: true });
  }

  async drainFrom(parentId: string): Promise<Outcome<{ drained: string[] }>> {
    return this.#parts ? this.#parts.self.drainFrom(parentId) : ok({ drained: [] });
  }

  /** The parent's watchdog (child-watch.ts): repairs a lost wake-up; true when there was one to repair. */
  async wake(): Promise<boolean> {
    return this.#parts ? this.#parts.loop.armIfOwed() : false;
  }

  knowsEpoch(runId: string): boolean {
    return this.#parts ? this.#parts.self.knowsEpoch(runId) : false;
  }

  entry(expectedParent: string): ChildEntry | null {
    const parts = this.#parts;
    if (this.#erased || parts?.deletion.deleting()) return null; // deleted: it leaves the listing
    if (!parts) return { kind: "diagnostic", id: "", reason: "unavailable", createdAt: 0 };
    return listingEntry(parts.ctx, expectedParent);
  }

  async childEntries(): Promise<ChildEntry[]> {
    return this.#parts && !this.#parts.deletion.deleting() ? childEntriesOf(this.#parts.ctx) : [];
  }

  /** Its parent deletes it with its tree (session/deletion.ts); `gone` once nothing of it is left. */
  async deleteFrom(parentId: string): Promise<{ gone: boolean }> {
    const parts = this.#parts;
    if (!parts) return { gone: true }; // erased (or never created): nothing of it is left
    if (parts.stores.header.get()?.parentSession !== parentId) return { gone: false };
    await parts.deletion.mark("parent");
    return { gone: false };
  }

  /** A page of the spans of this session's tree (its parent's `trace` asks: session/trace.ts). */
  async traceSpanPage(
    cursor: TraceCursor | undefined,
    budget: number,
    first: boolean,
  ): Promise<TreeSpanPage> {
    const parts = this.#parts;
    return parts && !parts.deletion.deleting()
      ? treeSpanPage(parts.ctx, cursor, budget, first)
      : { spans: [], bytes: 0 };
  }

  /** A session of the tree whose budget this one owns reports its spending (session/tree-budget.ts). */
  async drawBudget(memberId: string, draw: BudgetDraw): Promise<BudgetAnswer | undefined> {
    return this.#parts?.ctx.budget.draw(memberId, draw);
  }

  /** The newest activity of this session's tree (a root's retention asks). */
  async treeActivity(): Promise<number> {
    return this.#parts ? this.#parts.retention.treeActivity() : 0;
  }

  /** A child deleted on its own left this session (its runs end `aborted`, it leaves the listings). */
  childDeleted(childId: string): void {
    this.#parts?.deletion.childDeleted(childId);
  }

  // ---- platform entry points ----

  /**
   * The event stream (WebSocket upgrade, or SSE with `?transport=sse`) and the MCP face
   * (`/mcp`). The Worker passes the authenticated caller in a header.
   */
  async fetch(request: Request): Promise<Response> {
    const caller = callerOf(request);
    const url = new URL(request.url);
    // an MCP client acts on the session's tools: the session's (or an admin's) authority
    const session = caller
      ? this.#authorize(caller, url.pathname === "/mcp" ? "act" : "read")
      : fail("UNAUTHENTICATED", "no caller");
    if (!session.ok) return failure(session);
    const { mcp, subscribers } = session.value.parts;
    if (url.pathname === "/mcp") return mcp.handle(request);
    return subscribers.serve(request, url.searchParams, subscriberCap(this.env.MAX_SUBSCRIBERS_PER_SESSION));
  }

  async alarm(info?: AlarmInvocationInfo): Promise<void> {
    const parts = this.#parts;
    if (!parts) return; // never created: nothing can be owed
    parts.loop.alarmFired();
    try {
      await faultPoint(parts.stores.header.get()?.id ?? "", "in-alarm");
      await parts.loop.kick();
    } catch (error) {
      // The platform retries a failed alarm a few times, then gives up for good; before that
      // happens, re-arm ourselves so owed work is never left without a wake-up.
      if ((info?.retryCount ?? 0) < ALARM_RETRIES_BEFORE_SELF_REARM) throw error;
      console.error("alarm failed repeatedly; re-arming", error instanceof Error ? error.message : error);
      await this.ctx.storage.setAlarm(Date.now() + SELF_REARM_MS);
    }
  }

  webSocketMessage(): void {
    // the stream is one-way; client messages are ignored
  }

  webSocketClose(socket: WebSocket, code: number): void {
    socket.close(code === 1005 || code === 1006 ? 1000 : code, "closed");
  }

  // ---- wiring ----

  /** A new child's place in its tree, taken before anything of it is stored (child-spec.ts). */
  #treeSlot(spec: ChildInit | ContinuableInit): Promise<Outcome<void>> {
    const exists = this.#parts?.stores.header.get() !== undefined;
    return takeTreeSlot(spec, exists, (root) => sessionStub(this.env, root));
  }

  /**
   * The session was deleted (deletion.ts): its streams end, its loop stops, and its rows and alarm
   * are erased; this instance then answers as for an object that never existed.
   */
  async #erase(): Promise<void> {
    const parts = this.#parts;
    if (!parts) return;
    parts.loop.halt();
    parts.subscribers.closeAll();
    this.#parts = undefined;
    this.#erased = true;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  #open(): Parts {
    if (this.#parts) return this.#parts;
    // the tables as they are once migrated: a migration may create one (moving rows into it)
    const tables = new Set(this.#tables);
    const created = migrate(this.ctx.storage, undefined, { exists: tables.has("meta"), tables });
    this.#parts = assembleParts(
      this.ctx,
      this.env,
      this.#deployment,
      { erase: () => this.#erase() },
      {
        created,
        tables,
      },
    );
    return this.#parts;
  }

  /** The session and its parts when `caller` may `need` it (a session that exists has its parts). */
  #authorize(caller: Caller, need: Need): Outcome<{ header: SessionHeader; parts: Parts }> {
    const parts = this.#parts;
    // every caller's request is a chance to notice owed work whose alarm was lost
    parts?.loop.touched();
    const header = parts?.deletion.deleting() ? undefined : parts?.stores.header.get();
    const denied = checkAccess(header, caller, need);
    if (denied) return denied;
    return parts && header ? ok({ header, parts }) : fail("NOT_FOUND", "session not found");
  }
}

/** The authenticated caller the Worker passed with a forwarded request (none: unauthenticated). */
function callerOf(request: Request): Caller | null {
  return JSON.parse(request.headers.get(CALLER_HEADER) ?? "null") as Caller | null;
}
