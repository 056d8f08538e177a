import type { ProviderScope } from "../../src/contract/provider";
import { scopeOf } from "../../src/providers/provider-access";
import { compact } from "../../src/core/compact";
import { DurableObject } from "cloudflare:workers";
import type { ChildInit } from "../../src/contract/child-init";
import { toBlocks, type WireContent } from "../../src/contract/content";
import type {
  ContinuableInit,
  ContinuableStart,
  FollowupInput,
  InterruptAuthority,
} from "../../src/contract/continuable";
import type { Envelope } from "../../src/contract/envelope";
import { fail, ok, type Outcome } from "../../src/contract/errors";
import { newMessageId } from "../../src/contract/ids";
import { offersStreamProtocol, STREAM_PROTOCOL } from "../../src/contract/stream";
import type { RunView, StartedRun, StartRequest } from "../../src/contract/run";
import type { Caller, SessionHeader, SessionView } from "../../src/contract/session";
import type { CreateSession, EventPage, OutboxEntry, SendInput } from "../../src/contract/session-api";
import { checkAccess, type Need } from "../../src/core/access";
import { faultPoint } from "../../src/core/faults";
import { fingerprint } from "../../src/core/hash";
import { placementOf } from "../../src/core/placement";
import { quote } from "../../src/core/quote";
import { messageQuota } from "../../src/core/quotas";
import { sessionStub } from "../../src/platform/stubs";
import { reserveTreeSlot, takeTreeSlot } from "../delegation/child-spec";
import { type ChildEntry, type DescendantListing, publicEntry } from "../../src/core/listing";
import { failure } from "../../src/contract/respond";
import { childEntriesOf, descendantListing, entryOf } from "./listing";
import { applyCallback, type CallbackInput } from "../messaging/remote-callbacks";
import { migrate, tablesIn } from "../store/schema";
import { assembleParts, type Parts } from "./session-parts";
import { subscriberCap } from "./event-stream";
import type { Deployment } from "../../src/platform/deployment";

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
 * SQLite database. A thin shell: it authorizes RPC calls and hands them to the parts
 * (session-parts.ts assembles them); storage lives in the stores, decisions in `src/` and in the
 * parts, and the drive loop (drive-loop.ts) runs their work. Accepted work starts in-process at
 * once (no alarm round trip); the alarm is the safety net and the retry clock.
 */
export class SessionObject extends DurableObject<Env> {
  #parts: Parts | undefined;
  readonly #deployment: Deployment;
  /** The object's tables when this instance started (none: the first `#open` creates the schema). */
  readonly #tables: ReadonlySet<string>;

  /** Made by `createSubagents` (src/worker/), which passes the deployment's tools and models. */
  constructor(ctx: DurableObjectState, env: Env, deployment: Deployment) {
    super(ctx, env);
    this.#deployment = deployment;
    // An object that was never created stays empty: probing unknown ids stores nothing.
    this.#tables = tablesIn(ctx.storage.sql);
    if (this.#tables.has("meta")) {
      void ctx.blockConcurrencyWhile(async () => {
        await this.#open().loop.armIfOwed();
      });
    }
  }

  // ---- RPC surface: the registry Worker (every call carries the authenticated caller) ----

  create(input: CreateSession): Outcome<{ view: SessionView; replayed: boolean }> {
    const { stores } = this.#open();
    const existing = stores.header.get();
    if (existing) {
      if (input.createKey === undefined || existing.createKey === undefined)
        return fail("DUPLICATE_CHILD", `session ${input.id} already exists`);
      return existing.createKey === input.createKey && existing.tenant === input.tenant
        ? ok({ view: this.#view(existing), replayed: true })
        : fail("IDEMPOTENCY_KEY_REUSED", "this idempotencyKey was already used with a different body");
    }
    const header: SessionHeader = {
      id: input.id,
      parentSession: null,
      origin: null,
      delegationDepth: input.delegationDepth ?? 0,
      createdAt: Date.now(),
      tokenHash: input.tokenHash,
      lineage: [],
      ...compact({ tenant: input.tenant }),
      options: input.options,
      ...compact({ label: input.label }),
      ...placementOf(input),
      ...compact({ callback: input.callback }),
      ...compact({ createKey: input.createKey }),
    };
    stores.transact(() => stores.header.set(header));
    return ok({ view: this.#view(header), replayed: false });
  }

  describe(caller: Caller): Outcome<SessionView> {
    const header = this.#authorize(caller, "read");
    return header.ok ? ok(this.#view(header.value)) : header;
  }

  /** The providers this session may use (its tenant, its `providers` option), for its token's listings. */
  providerScope(caller: Caller): Outcome<ProviderScope> {
    const header = this.#authorize(caller, "read");
    return header.ok ? ok(scopeOf(header.value)) : header;
  }

  send(caller: Caller, input: SendInput): Outcome<{ messageId: string }> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    const { stores, ctx } = this.#parts!;
    const content = toBlocks(input.content);
    // MAX_PENDING_MESSAGES and MAX_LOG_BYTES: a refused message stores nothing (src/core/quotas.ts)
    const quota = messageQuota(stores.log.bytes(), ctx.limits);
    const admitted = stores.transact(() => {
      const result = stores.inbox.admit({
        messageId: newMessageId(),
        lane: "next-turn",
        waking: true,
        source: { kind: "user" },
        content,
        contentHash: fingerprint(JSON.stringify(content)),
        ...compact({ idempotencyKey: input.idempotencyKey }),
        capacity: quota.capacity,
      });
      const loop = stores.loop.get();
      // a full inbox parked by an interrupt resumes (its turns free places); a full log does not
      if (result.kind === "accepted" || (result.kind === "full" && quota.capacity > 0 && loop.parked))
        stores.loop.set({ ...loop, parked: false });
      return result;
    });
    if (admitted.kind === "full") {
      if (quota.capacity > 0) this.#parts!.loop.kickSoon();
      return quota.refusal;
    }
    if (admitted.kind === "conflict") {
      return fail("IDEMPOTENCY_KEY_REUSED", "this idempotencyKey was already used with different content");
    }
    if (admitted.kind === "accepted") this.#parts!.loop.kickSoon();
    return ok({ messageId: admitted.messageId });
  }

  /**
   * A page of the log after `query.after`; with `waitMs`, an empty page waits (up to that long,
   * at most 60 s) for the next committed event first: a long poll.
   */
  async events(
    caller: Caller,
    query: { after: number; limit: number },
    waitMs = 0,
  ): Promise<Outcome<EventPage>> {
    const header = this.#authorize(caller, "read");
    if (!header.ok) return header;
    const { stores, stream } = this.#parts!;
    await stream.waitAfter(query.after, Math.min(Math.max(0, waitMs), MAX_EVENTS_WAIT_MS));
    const { log } = stores;
    const events = log.page(query.after, query.limit, EVENTS_PAGE_BYTES);
    const last = events[events.length - 1];
    const more = last !== undefined && last.seq < log.nextSeq() - 1;
    return ok({ events, next: more ? last.seq : null });
  }

  interrupt(caller: Caller): Outcome<{ accepted: true }> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    const { turns, loop } = this.#parts!;
    turns.interrupt("user");
    loop.kickSoon(); // foreground children of the aborted turn get their cancel
    return ok({ accepted: true });
  }

  async startRun(caller: Caller, request: StartRequest): Promise<Outcome<StartedRun>> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    const started = await this.#parts!.runs.start(request);
    return started.ok
      ? ok({ runId: started.value.runId, id: started.value.id, local: started.value.local })
      : started;
  }

  async runStatus(caller: Caller, runId: string, waitMs: number): Promise<Outcome<RunView>> {
    const header = this.#authorize(caller, "read");
    if (!header.ok) return header;
    const { runs } = this.#parts!;
    const run = await runs.waitFor(runId, waitMs);
    return run ? ok(runs.view(run)) : fail("NOT_FOUND", `no run ${quote(runId)}`);
  }

  disposeRun(caller: Caller, runId: string): Outcome<{ accepted: true }> {
    const header = this.#authorize(caller, "act");
    return header.ok ? this.#parts!.runs.dispose(runId) : header;
  }

  async startContinuable(
    caller: Caller,
    spec: ContinuableStart,
  ): Promise<Outcome<{ childId: string; messageId: string }>> {
    const header = this.#authorize(caller, "act");
    return header.ok ? this.#parts!.children.start(spec) : header;
  }

  async followupChild(
    caller: Caller,
    childId: string,
    content: WireContent,
  ): Promise<Outcome<{ messageId: string }>> {
    const header = this.#authorize(caller, "act");
    return header.ok ? this.#parts!.children.followup(childId, content, { kind: "user" }) : header;
  }

  async interruptChild(caller: Caller, childId: string): Promise<Outcome<{ accepted: true }>> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    return this.#parts!.children.interrupt(childId, { kind: "user", parentSessionId: header.value.id });
  }

  async drainChildren(caller: Caller, childIds?: string[]): Promise<Outcome<{ drained: string[] }>> {
    const header = this.#authorize(caller, "act");
    return header.ok ? this.#parts!.drains.drain(childIds) : header;
  }

  async listChildren(caller: Caller): Promise<Outcome<{ entries: ChildEntry[] }>> {
    const header = this.#authorize(caller, "read");
    return header.ok ? ok({ entries: (await childEntriesOf(this.#parts!.ctx)).map(publicEntry) }) : header;
  }

  async listDescendants(caller: Caller): Promise<Outcome<DescendantListing>> {
    const header = this.#authorize(caller, "read");
    return header.ok ? ok(await descendantListing(this.#parts!.ctx)) : header;
  }

  outbox(caller: Caller): Outcome<{ entries: OutboxEntry[] }> {
    const header = this.#authorize(caller, "read");
    return header.ok ? ok({ entries: this.#parts!.stores.outbox.list() }) : header;
  }

  /** A signed callback from another deployment with a remote run's result (remote-callbacks.ts). */
  async remoteCallback(runId: string, input: CallbackInput): Promise<Outcome<{ applied: true }>> {
    if (!this.#parts) return fail("NOT_FOUND", "no such run"); // never created: nothing to apply to
    return applyCallback(this.#parts.ctx, this.#parts.remote, runId, input);
  }

  // ---- RPC surface: other session objects (never reachable over HTTP) ----

  async init(spec: ChildInit): Promise<Outcome<{ id: string }>> {
    const slot = await this.#treeSlot(spec);
    return slot.ok ? this.#open().oneShot.init(spec) : slot;
  }

  async initContinuable(spec: ContinuableInit): Promise<Outcome<{ id: string; messageId: string }>> {
    const slot = await this.#treeSlot(spec);
    return slot.ok ? this.#open().self.init(spec) : slot;
  }

  /** At a tree's root: a slot for a session below one of its descendants (MAX_SESSIONS_PER_TREE). */
  reserveTreeSlot(childId: string): Outcome<void> {
    if (!this.#parts) return fail("NOT_FOUND", "no such session"); // never created: stays empty
    return reserveTreeSlot(this.#parts.ctx, childId);
  }

  async deliver(envelope: Envelope): Promise<Outcome<{ applied: boolean }>> {
    // a cancel may outrun the child's creation (it leaves a tombstone); anything else needs a session
    if (!this.#parts && envelope.kind !== "cancel-run") return fail("NOT_FOUND", "no such session");
    return this.#open().delivery.deliver(envelope);
  }

  followup(input: FollowupInput): Outcome<{ messageId: string; resumed: boolean }> {
    if (!this.#parts)
      return fail("NOT_RESUMABLE", "subagent is unavailable (unknown id); do not retry send_message with it");
    return this.#parts.self.receiveFollowup(input);
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
    if (!this.#parts) return { kind: "diagnostic", id: "", reason: "unavailable", createdAt: 0 };
    const header = this.#parts.ctx.header();
    const status = this.#status();
    const live =
      header?.mode === "continuable" ? this.#parts.self.activation() !== undefined : status !== "idle";
    return entryOf(this.#parts.ctx, expectedParent, { status, live });
  }

  async childEntries(): Promise<ChildEntry[]> {
    return this.#parts ? childEntriesOf(this.#parts.ctx) : [];
  }

  // ---- platform entry points ----

  /** The event stream (WebSocket upgrade). The Worker passes the authenticated caller in a header. */
  override async fetch(request: Request): Promise<Response> {
    const caller = JSON.parse(request.headers.get("x-subagents-caller") ?? "null") as Caller | null;
    const header = caller ? this.#authorize(caller, "read") : fail("UNAUTHENTICATED", "no caller");
    if (!header.ok) return failure(header);
    const url = new URL(request.url);
    if (url.pathname === "/mcp") {
      // an MCP client acts on the session's tools: the session's (or an admin's) authority
      const acting = caller ? this.#authorize(caller, "act") : header;
      return acting.ok ? this.#parts!.mcp.handle(request) : failure(acting);
    }
    const query = url.searchParams;
    const after = Number(query.get("after") ?? "-1");
    if (query.get("transport") === "sse") {
      const { stream, stores } = this.#parts!;
      return stream.openSse(
        Math.min(after, stores.log.nextSeq() - 1),
        query.get("deltas") === "true",
        subscriberCap(this.env.MAX_SUBSCRIBERS_PER_SESSION),
      );
    }
    const { stream, stores } = this.#parts!;
    // a cursor past the end would silently skip the events that fill the gap
    const protocol = offersStreamProtocol(request.headers.get("sec-websocket-protocol"))
      ? STREAM_PROTOCOL
      : undefined;
    return stream.open(
      Math.min(after, stores.log.nextSeq() - 1),
      protocol,
      query.get("deltas") === "true",
      subscriberCap(this.env.MAX_SUBSCRIBERS_PER_SESSION),
    );
  }

  override async alarm(info?: AlarmInvocationInfo): Promise<void> {
    if (!this.#parts) return; // never created: nothing can be owed
    this.#parts.loop.alarmFired();
    try {
      await faultPoint(this.#id(), "in-alarm");
      await this.#parts.loop.kick();
    } catch (error) {
      // The platform retries a failed alarm a few times, then gives up for good; before that
      // happens, re-arm ourselves so owed work is never left without a wake-up.
      if ((info?.retryCount ?? 0) < ALARM_RETRIES_BEFORE_SELF_REARM) throw error;
      console.error("alarm failed repeatedly; re-arming", error instanceof Error ? error.message : error);
      await this.ctx.storage.setAlarm(Date.now() + SELF_REARM_MS);
    }
  }

  override webSocketMessage(): void {
    // the stream is one-way; client messages are ignored
  }

  override webSocketClose(socket: WebSocket, code: number): void {
    socket.close(code === 1005 || code === 1006 ? 1000 : code, "closed");
  }

  // ---- wiring ----

  #id(): string {
    return this.#parts?.stores.header.get()?.id ?? "";
  }

  /** A new child's place in its tree, taken before anything of it is stored (child-spec.ts). */
  #treeSlot(spec: ChildInit | ContinuableInit): Promise<Outcome<void>> {
    const exists = this.#parts?.stores.header.get() !== undefined;
    return takeTreeSlot(spec, exists, (root) => sessionStub(this.env, root));
  }

  #open(): Parts {
    if (this.#parts) return this.#parts;
    const created = migrate(this.ctx.storage, undefined, { exists: this.#tables.has("meta") });
    this.#parts = assembleParts(this.ctx, this.env, this.#deployment, { created, tables: this.#tables });
    return this.#parts;
  }

  #authorize(caller: Caller, need: Need): Outcome<SessionHeader> {
    // every caller's request is a chance to notice owed work whose alarm was lost
    this.#parts?.loop.touched();
    const header = this.#parts?.stores.header.get();
    const denied = checkAccess(header, caller, need);
    return denied ?? ok(header!);
  }

  #view(header: SessionHeader): SessionView {
    const view: SessionView = {
      id: header.id,
      parentSession: header.parentSession,
      origin: header.origin,
      delegationDepth: header.delegationDepth,
      createdAt: header.createdAt,
      status: this.#status(),
      model: header.options.model,
      lastSeq: this.#parts!.stores.log.nextSeq() - 1,
    };
    if (header.seedLength !== undefined) view.seedLength = header.seedLength;
    if (header.mode !== undefined) view.mode = header.mode;
    if (header.label !== undefined) view.label = header.label;
    const { usage } = this.#parts!.stores;
    const own = usage.own();
    if (own) view.usage = own;
    const subtree = usage.subtree();
    if (subtree) view.subtreeUsage = subtree;
    if (header.options.budget)
      view.budget = { tokens: header.options.budget.tokens, used: usage.budgetUsed() };
    // which MCP servers it has, never their tokens
    if (header.options.mcpServers?.length)
      view.mcpServers = header.options.mcpServers.map(({ name, url }) => ({ name, url }));
    return { ...view, ...placementOf(header) };
  }

  /** running: a turn is open or work is owed; waiting: children it owns still run; idle otherwise. */
  #status(): "running" | "waiting" | "idle" {
    const { stores, turns } = this.#parts!;
    if (stores.loop.get().openTurn !== null || turns.owesStep()) return "running";
    return stores.children.ownedContinuable().length + stores.runs.unsettledCount() > 0 ? "waiting" : "idle";
  }
}
