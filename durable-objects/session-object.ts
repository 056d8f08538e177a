import { DurableObject } from "cloudflare:workers";
import { builtinTools } from "../src/agent/builtin-tools";
import {
  structuredOutputTool,
  subagentTool,
  subagentToolName,
  taskKillTool,
  taskOutputTool,
} from "../src/agent/delegation-tools";
import { interruptAgentTool, listAgentsTool, reportTool, sendMessageTool } from "../src/agent/control-tools";
import type { RunOrigin, SessionHost } from "../src/agent/host";
import { type ModelSettings, modelFor } from "../src/agent/model-router";
import type { Tool, ToolRegistry } from "../src/agent/tools";
import { TurnDriver } from "../src/agent/turn-driver";
import type { ChildInit } from "../src/contract/child-init";
import { toBlocks } from "../src/contract/content";
import type {
  ContinuableInit,
  ContinuableStart,
  FollowupInput,
  InterruptAuthority,
} from "../src/contract/continuable";
import type { Envelope } from "../src/contract/envelope";
import type { WireContent } from "../src/contract/content";
import { fail, ok, type Outcome } from "../src/contract/errors";
import { newMessageId } from "../src/contract/ids";
import type { RunView, StartedRun, StartRequest } from "../src/contract/run";
import type { Caller, SessionHeader, SessionView } from "../src/contract/session";
import type { CreateSession, EventPage, OutboxEntry, SendInput } from "../src/contract/session-api";
import { checkAccess, type Need } from "../src/core/access";
import { faultPoint } from "../src/core/faults";
import { fingerprint } from "../src/core/hash";
import { DEFAULT_PROVIDERS, describeProvider, type ProviderInfo } from "../src/providers/catalog";
import { failure } from "../src/http/respond";
import { registryStub, sessionStub } from "../src/http/sessions";
import { type ChildEntry, type DescendantEntry, preOrder } from "../src/core/listing";
import { foldDescriptor } from "../src/core/descriptor";
import { Continuation } from "./continuation";
import { Delegation } from "./delegation";
import { EventStream } from "./event-stream";
import { migrate, schemaExists } from "./schema";
import { SessionStores } from "./session-stores";

/** If the in-process driver dies with its instance, the alarm picks the work up after this long. */
const SAFETY_NET_MS = 5_000;
/** After this many platform retries of a failing alarm, the alarm re-arms itself instead of throwing. */
const ALARM_RETRIES_BEFORE_SELF_REARM = 4;
const SELF_REARM_MS = 30_000;
/** How long the provider list behind the `subagent` tools may be reused (starts always re-check). */
const PROVIDER_LIST_TTL_MS = 2_000;

/**
 * One session: its header, append-only log, inbox, turn loop, runs and outbox, in its own SQLite
 * database. A thin shell: storage lives in the stores, decisions in `src/` and `Delegation`.
 * Accepted work starts in-process right away (no alarm round trip); the alarm is the safety net
 * and the retry clock. Nothing a turn needs lives only in memory.
 */
export class SessionObject extends DurableObject<Env> {
  #stores: SessionStores | undefined;
  #driver: TurnDriver<SessionHost> | undefined;
  #delegation: Delegation | undefined;
  #continuation: Continuation | undefined;
  #stream: EventStream | undefined;
  #running: Promise<void> | null = null;
  #wake = false;
  #providers: { at: number; list: ProviderInfo[] } | undefined;
  readonly #tools: ToolRegistry<SessionHost> = builtinTools();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // An object that was never created stays empty: probing unknown ids stores nothing.
    if (schemaExists(ctx.storage.sql)) {
      void ctx.blockConcurrencyWhile(async () => {
        this.#open();
        await this.#repair();
      });
    }
  }

  // ---- RPC surface: the registry Worker ----

  create(input: CreateSession): Outcome<SessionView> {
    const stores = this.#open();
    if (stores.header.get()) return fail("DUPLICATE_CHILD", `session ${input.id} already exists`);
    const header: SessionHeader = {
      id: input.id,
      parentSession: null,
      origin: null,
      delegationDepth: 0,
      createdAt: Date.now(),
      tokenHash: input.tokenHash,
      lineage: [],
      ...(input.tenant === undefined ? {} : { tenant: input.tenant }),
      options: input.options,
      ...(input.label === undefined ? {} : { label: input.label }),
    };
    stores.transact(() => stores.header.set(header));
    return ok(this.#view(header));
  }

  describe(caller: Caller): Outcome<SessionView> {
    const header = this.#authorize(caller, "read");
    return header.ok ? ok(this.#view(header.value)) : header;
  }

  send(caller: Caller, input: SendInput): Outcome<{ messageId: string }> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    const stores = this.#stores!;
    const content = toBlocks(input.content);
    const admitted = stores.transact(() => {
      const result = stores.inbox.admit({
        messageId: newMessageId(),
        lane: "next-turn",
        waking: true,
        source: { kind: "user" },
        content,
        contentHash: fingerprint(JSON.stringify(content)),
        ...(input.idempotencyKey === undefined ? {} : { idempotencyKey: input.idempotencyKey }),
      });
      if (result.kind === "accepted") stores.loop.set({ ...stores.loop.get(), parked: false });
      return result;
    });
    if (admitted.kind === "conflict") {
      return fail("IDEMPOTENCY_KEY_REUSED", "this idempotencyKey was already used with different content");
    }
    if (admitted.kind === "accepted") this.#kickSoon();
    return ok({ messageId: admitted.messageId });
  }

  events(caller: Caller, query: { after: number; limit: number }): Outcome<EventPage> {
    const header = this.#authorize(caller, "read");
    if (!header.ok) return header;
    const { log } = this.#stores!;
    const events = log.page(query.after, query.limit);
    const last = events[events.length - 1];
    const more = last !== undefined && last.seq < log.nextSeq() - 1;
    return ok({ events, next: more ? last.seq : null });
  }

  interrupt(caller: Caller): Outcome<{ accepted: true }> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    this.#driver!.interrupt("user");
    this.#kickSoon(); // foreground children of the aborted turn get their cancel
    return ok({ accepted: true });
  }

  async startRun(caller: Caller, request: StartRequest): Promise<Outcome<StartedRun>> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    const started = await this.#delegation!.start(request);
    return started.ok
      ? ok({ runId: started.value.runId, id: started.value.id, local: started.value.local })
      : started;
  }

  async runStatus(caller: Caller, runId: string, waitMs: number): Promise<Outcome<RunView>> {
    const header = this.#authorize(caller, "read");
    if (!header.ok) return header;
    const run = await this.#delegation!.waitFor(runId, waitMs);
    return run ? ok(this.#delegation!.view(run)) : fail("NOT_FOUND", `no run ${runId}`);
  }

  disposeRun(caller: Caller, runId: string): Outcome<{ accepted: true }> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    return this.#delegation!.dispose(runId);
  }

  async startContinuable(
    caller: Caller,
    spec: ContinuableStart,
  ): Promise<Outcome<{ childId: string; messageId: string }>> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    return this.#continuation!.start(spec);
  }

  async followupChild(
    caller: Caller,
    childId: string,
    content: WireContent,
  ): Promise<Outcome<{ messageId: string }>> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    return this.#continuation!.followup(childId, content, { kind: "user" });
  }

  async interruptChild(caller: Caller, childId: string): Promise<Outcome<{ accepted: true }>> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    return this.#continuation!.interruptChild(childId, { kind: "user", parentSessionId: header.value.id });
  }

  async drainChildren(caller: Caller, childIds?: string[]): Promise<Outcome<{ drained: string[] }>> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    return this.#continuation!.drain(childIds);
  }

  async listChildren(caller: Caller): Promise<Outcome<{ entries: ChildEntry[] }>> {
    const header = this.#authorize(caller, "read");
    if (!header.ok) return header;
    return ok({ entries: await this.childEntries() });
  }

  async listDescendants(caller: Caller): Promise<Outcome<{ entries: DescendantEntry[] }>> {
    const header = this.#authorize(caller, "read");
    if (!header.ok) return header;
    return ok({ entries: await this.#descendants() });
  }

  outbox(caller: Caller): Outcome<{ entries: OutboxEntry[] }> {
    const header = this.#authorize(caller, "read");
    if (!header.ok) return header;
    return ok({ entries: this.#delegation!.outbox.list() });
  }

  // ---- RPC surface: other session objects ----

  async initContinuable(spec: ContinuableInit): Promise<Outcome<{ id: string; messageId: string }>> {
    this.#open();
    return this.#continuation!.init(spec);
  }

  followup(input: FollowupInput): Outcome<{ messageId: string; resumed: boolean }> {
    if (!this.#stores)
      return fail("NOT_RESUMABLE", "subagent is unavailable (unknown id); do not retry send_message with it");
    return this.#continuation!.receiveFollowup(input);
  }

  interruptBy(authority: InterruptAuthority): Outcome<{ accepted: true }> {
    if (!this.#stores) return ok({ accepted: true });
    return this.#continuation!.interruptBy(authority);
  }

  async drainFrom(parentId: string): Promise<Outcome<{ drained: string[] }>> {
    if (!this.#stores) return ok({ drained: [] });
    return this.#continuation!.drainFrom(parentId);
  }

  entry(expectedParent: string): ChildEntry | null {
    const header = this.#header();
    const createdAt = header?.createdAt ?? 0;
    if (!header) return { kind: "diagnostic", id: "", reason: "unavailable", createdAt };
    if (header.parentSession !== expectedParent)
      return { kind: "diagnostic", id: header.id, reason: "corrupt", createdAt };
    let identity: ReturnType<typeof foldDescriptor>;
    try {
      // the listing projection folds descriptors last-wins over the whole log
      identity = foldDescriptor(
        this.#stores!.log.ofTypes(["subagent/descriptor"])
          .map((e) => e.data)
          .slice(-1),
      );
    } catch {
      return { kind: "diagnostic", id: header.id, reason: "corrupt", createdAt };
    }
    if (!identity) return null;
    const status = this.#status();
    const live =
      header.mode === "continuable" ? this.#continuation!.activation() !== undefined : status !== "idle";
    return {
      kind: "child",
      id: header.id,
      activity: live ? "running" : "inactive",
      hasChildren: this.#delegation!.children.all().length > 0,
      mode: identity.mode,
      ...(identity.label === undefined ? {} : { label: identity.label }),
      status,
      provider: identity.provider,
      createdAt,
    };
  }

  async childEntries(): Promise<ChildEntry[]> {
    const self = this.#id();
    const rows = this.#delegation!.children.all();
    const entries: (ChildEntry | null)[] = new Array(rows.length).fill(null);
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < rows.length; i = next++) {
        const row = rows[i]!;
        try {
          const entry = await sessionStub(this.env, row.childId).entry(self);
          entries[i] = entry && { ...entry, id: row.childId, createdAt: row.createdAt };
        } catch {
          entries[i] = {
            kind: "diagnostic",
            id: row.childId,
            reason: "unavailable",
            createdAt: row.createdAt,
          };
        }
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]); // bounded concurrency
    return entries.filter((e): e is ChildEntry => e !== null);
  }

  async #descendants(): Promise<DescendantEntry[]> {
    const self = this.#id();
    return preOrder(
      self,
      (id) => (id === self ? this.childEntries() : sessionStub(this.env, id).childEntries()),
      (entry) => entry.kind === "diagnostic" || entry.hasChildren,
    );
  }

  async init(spec: ChildInit): Promise<Outcome<{ id: string }>> {
    this.#open();
    return this.#delegation!.init(spec);
  }

  async deliver(envelope: Envelope): Promise<Outcome<{ applied: boolean }>> {
    // a cancel may outrun the child's creation (it leaves a tombstone); anything else needs a session
    if (!this.#stores && envelope.kind !== "cancel-run") return fail("NOT_FOUND", "no such session");
    this.#open();
    return this.#delegation!.deliver(envelope);
  }

  // ---- platform entry points ----

  /** The event stream (WebSocket upgrade). The Worker passes the authenticated caller in a header. */
  override async fetch(request: Request): Promise<Response> {
    const caller = JSON.parse(request.headers.get("x-subagents-caller") ?? "null") as Caller | null;
    const header = caller ? this.#authorize(caller, "read") : fail("UNAUTHENTICATED", "no caller");
    if (!header.ok) return failure(header);
    const after = Number(new URL(request.url).searchParams.get("after") ?? "-1");
    // a cursor past the end would silently skip the events that fill the gap
    return this.#stream!.open(Math.min(after, this.#stores!.log.nextSeq() - 1));
  }

  override async alarm(info?: AlarmInvocationInfo): Promise<void> {
    if (!this.#stores) return; // never created: nothing can be owed
    try {
      await faultPoint(this.#id(), "in-alarm");
      await this.#kick();
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

  // ---- internals ----

  #id(): string {
    return this.#header()?.id ?? "";
  }

  #open(): SessionStores {
    if (this.#stores) return this.#stores;
    migrate(this.ctx.storage);
    const stores = new SessionStores(this.ctx.storage);
    this.#stream = new EventStream(this.ctx, stores.log);
    stores.stream = this.#stream;
    this.#stores = stores;
    const host = this.#host();
    this.#driver = new TurnDriver<SessionHost>({
      stores,
      get sessionId() {
        return host.sessionId;
      },
      modelRoute: () => this.#header()?.options.model ?? this.env.DEFAULT_MODEL,
      model: () => modelFor(this.#header()?.options.model ?? this.env.DEFAULT_MODEL, this.#modelSettings()),
      system: () => this.#header()?.options.persona,
      tools: () => this.#visibleTools(),
      registry: this.#tools,
      host,
      inFlight: (keys) => this.#delegation!.runs.inFlight(keys),
      onTurnEnd: (turn) => this.#delegation!.onTurnEnd(turn),
    });
    this.#delegation = new Delegation({
      stores,
      header: () => this.#header(),
      driver: () => this.#driver!,
      tools: this.#tools,
      session: (id) => sessionStub(this.env, id),
      provider: (name) => registryStub(this.env).resolve(name),
      modelSettings: () => this.#modelSettings(),
      depthCap: this.env.MAX_DEPTH_CAP,
      childCap: this.env.MAX_CHILDREN_PER_SESSION,
      kick: () => this.#kickSoon(),
      receive: (envelope) => {
        if (envelope.kind === "report") this.#continuation!.applyReport(envelope);
        else this.#continuation!.applySettled(envelope);
      },
    });
    this.#continuation = new Continuation({
      stores,
      header: () => this.#header(),
      driver: () => this.#driver!,
      delegation: this.#delegation,
      tools: this.#tools,
      session: (id) => sessionStub(this.env, id),
      provider: (name) => registryStub(this.env).resolve(name),
      modelSettings: () => this.#modelSettings(),
      depthCap: this.env.MAX_DEPTH_CAP,
      kick: () => this.#kickSoon(),
    });
    return stores;
  }

  /** What tools may ask of this session; private internals stay off the RPC surface. */
  #host(): SessionHost {
    const self = this;
    return {
      get sessionId() {
        return self.#id();
      },
      startRun: (request: StartRequest, origin: RunOrigin) => self.#delegation!.start(request, origin),
      task: (taskId: string) => {
        const run = self.#delegation!.runs.byTaskId(taskId);
        return run ? self.#delegation!.view(run) : undefined;
      },
      killTask: (taskId: string) => {
        const run = self.#delegation!.runs.byTaskId(taskId);
        return run ? self.#delegation!.dispose(run.runId) : fail("NOT_FOUND", `unknown task ${taskId}`);
      },
      startContinuable: (request) => self.#continuation!.start(request),
      followup: (childId, text) =>
        self.#continuation!.followup(childId, text, {
          kind: "coordinator",
          form: "relay",
          senderSessionId: self.#id(),
        }),
      interruptAgent: (targetId) =>
        self.#continuation!.interruptChild(targetId, { kind: "ancestor", ancestorId: self.#id() }),
      listAgents: async (scope) =>
        ok(scope === "children" ? await self.childEntries() : await self.#descendants()),
      report: (text) =>
        self.#continuation!.report(text, self.#header()?.options.reportDelivery ?? "next-step"),
    };
  }

  async #visibleTools(): Promise<Tool<unknown, SessionHost>[]> {
    const header = this.#header();
    if (!header) return [];
    const providers = await this.#providerList();
    const allowed = header.options.providers;
    const mode = header.options.backgroundMode ?? "continuable";
    const delegation = providers
      .filter((p) => allowed === undefined || allowed.includes(p.name))
      .map((p, i) => subagentTool(p, subagentToolName(p.name, i), mode) as Tool<unknown, SessionHost>);
    const control = [
      sendMessageTool,
      interruptAgentTool,
      listAgentsTool,
      taskOutputTool,
      taskKillTool,
    ] as Tool<unknown, SessionHost>[];
    const filter = header.options.toolFilter;
    const visible = [...this.#tools.visible(undefined), ...delegation, ...control].filter(
      (t) =>
        (filter?.allow === undefined || filter.allow.includes(t.name)) && !filter?.deny?.includes(t.name),
    );
    // the capture tool and the report tool survive any filter: they are how a child answers
    const schema = header.oneShot?.outputSchema;
    if (schema) visible.push(structuredOutputTool(schema));
    if (header.mode === "continuable") visible.push(reportTool as Tool<unknown, SessionHost>);
    return visible;
  }

  async #providerList(): Promise<ProviderInfo[]> {
    if (this.#providers && Date.now() - this.#providers.at < PROVIDER_LIST_TTL_MS)
      return this.#providers.list;
    try {
      const list = await registryStub(this.env).list();
      this.#providers = { at: Date.now(), list };
      return list;
    } catch {
      // the registry is unreachable: offer the last known tools; a start re-checks the registry
      return this.#providers?.list ?? DEFAULT_PROVIDERS.map(describeProvider);
    }
  }

  #header(): SessionHeader | undefined {
    return this.#stores?.header.get();
  }

  #authorize(caller: Caller, need: Need): Outcome<SessionHeader> {
    const header = this.#header();
    const denied = checkAccess(header, caller, need);
    return denied ?? ok(header!);
  }

  #modelSettings(): ModelSettings {
    const env = this.env as Env & { OPENAI_API_KEY?: string };
    const settings: ModelSettings = { defaultModel: env.DEFAULT_MODEL, openAiBaseUrl: env.OPENAI_BASE_URL };
    if (env.OPENAI_API_KEY) settings.openAiApiKey = env.OPENAI_API_KEY;
    if (env.AI) settings.ai = env.AI as unknown as NonNullable<ModelSettings["ai"]>;
    return settings;
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
      lastSeq: this.#stores!.log.nextSeq() - 1,
    };
    if (header.seedLength !== undefined) view.seedLength = header.seedLength;
    if (header.mode !== undefined) view.mode = header.mode;
    if (header.label !== undefined) view.label = header.label;
    return view;
  }

  /** running: work is open or owed; waiting: children it owns still run; idle otherwise. */
  #status(): "running" | "waiting" | "idle" {
    if (this.#busy()) return "running";
    const owned =
      this.#delegation!.children.ownedContinuable().length + this.#delegation!.runs.unsettledCount();
    return owned > 0 ? "waiting" : "idle";
  }

  /** Running: a turn is open or waking work is pending (and not parked by an interrupt). */
  #busy(): boolean {
    return this.#stores!.loop.get().openTurn !== null || this.#driver!.owesStep();
  }

  /**
   * Starts the driver without waiting for it. A failure here is not lost work: the safety-net
   * alarm armed at the start of every drive runs it again.
   */
  #kickSoon(): void {
    this.#kick().catch((error: unknown) => {
      console.error(
        "driver step failed; the alarm will retry",
        error instanceof Error ? error.message : error,
      );
    });
  }

  /** Starts (or re-checks) the in-process driver; resolves when it has nothing left to do. */
  #kick(): Promise<void> {
    this.#wake = true;
    if (!this.#running) {
      this.#running = this.#drive().finally(() => {
        this.#running = null;
      });
    }
    return this.#running;
  }

  async #drive(): Promise<void> {
    const driver = this.#driver!;
    const delegation = this.#delegation!;
    await this.ctx.storage.setAlarm(Date.now() + SAFETY_NET_MS);
    await faultPoint(this.#id(), "after-accept");
    for (;;) {
      this.#wake = false;
      if (await driver.step()) continue;
      if (await delegation.drainOutbox()) continue;
      if (await delegation.repairStarts()) continue;
      if (this.#continuation!.settleIfDone()) continue;
      await this.#schedule();
      if (!this.#wake) return;
    }
  }

  /** Re-arms the one alarm to the earliest owed item (step, outbox retry, start repair), or clears it. */
  async #schedule(): Promise<void> {
    const now = Date.now();
    const outbox = this.#delegation!.nextDue();
    const due = this.#driver!.owesStep() ? now : outbox;
    if (due === undefined) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.max(due, now + 1));
  }

  /** Boot-time repair: owed work with no alarm armed would never wake up. */
  async #repair(): Promise<void> {
    const owed = this.#driver!.owesStep() || this.#delegation!.nextDue() !== undefined;
    if (owed && (await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + 1);
  }
}
