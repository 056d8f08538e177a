import { DurableObject } from "cloudflare:workers";
import { builtinTools } from "../src/agent/builtin-tools";
import type { SessionHost } from "../src/agent/host";
import { modelFor, type ModelSettings } from "../src/agent/model-router";
import { TurnDriver } from "../src/agent/turn-driver";
import type { ToolRegistry } from "../src/agent/tools";
import { toBlocks } from "../src/contract/content";
import { fail, ok, type Outcome } from "../src/contract/errors";
import { newMessageId } from "../src/contract/ids";
import type { Caller, SessionHeader, SessionView } from "../src/contract/session";
import type { CreateSession, EventPage, SendInput } from "../src/contract/session-api";
import { checkAccess, type Need } from "../src/core/access";
import { faultPoint } from "../src/core/faults";
import { fingerprint } from "../src/core/hash";
import { owesWork } from "../src/core/turn-plan";
import { EventStream } from "./event-stream";
import { migrate, schemaExists } from "./schema";
import { SessionStores } from "./session-stores";

/** If the in-process driver dies with its instance, the alarm picks the work up after this long. */
const SAFETY_NET_MS = 5_000;

/**
 * One session: its header, append-only log, inbox and turn loop, in its own SQLite database.
 * A thin shell: storage lives in the stores, decisions in `src/`. The alarm is the turn driver's
 * safety net; accepted work is also started in-process right away so a turn does not wait for
 * an alarm round trip. Nothing a turn needs lives only in memory.
 */
export class SessionObject extends DurableObject<Env> implements SessionHost {
  #stores: SessionStores | undefined;
  #driver: TurnDriver<SessionHost> | undefined;
  #stream: EventStream | undefined;
  #running: Promise<void> | null = null;
  #wake = false;
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

  get sessionId(): string {
    return this.#header()?.id ?? "";
  }

  // ---- RPC surface (called by the registry Worker) ----

  async create(input: CreateSession): Promise<Outcome<SessionView>> {
    const stores = this.#open();
    const existing = stores.header.get();
    if (existing) return fail("DUPLICATE_CHILD", `session ${input.id} already exists`);
    const header: SessionHeader = {
      id: input.id,
      parentSession: null,
      origin: null,
      delegationDepth: 0,
      createdAt: Date.now(),
      tokenHash: input.tokenHash,
      lineage: [],
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
    if (admitted.kind === "accepted") this.#kick();
    return ok({ messageId: admitted.messageId });
  }

  events(caller: Caller, query: { after: number; limit: number }): Outcome<EventPage> {
    const header = this.#authorize(caller, "read");
    if (!header.ok) return header;
    const events = this.#stores!.log.page(query.after, query.limit);
    const last = events[events.length - 1];
    const more = last !== undefined && last.seq < this.#stores!.log.nextSeq() - 1;
    return ok({ events, next: more ? last.seq : null });
  }

  interrupt(caller: Caller): Outcome<{ accepted: true }> {
    const header = this.#authorize(caller, "act");
    if (!header.ok) return header;
    this.#driver!.interrupt("user");
    return ok({ accepted: true });
  }

  /** The event stream (WebSocket upgrade). The Worker passes the authenticated caller in a header. */
  override async fetch(request: Request): Promise<Response> {
    const caller = JSON.parse(request.headers.get("x-subagents-caller") ?? "null") as Caller | null;
    const header = caller ? this.#authorize(caller, "read") : fail("UNAUTHENTICATED", "no caller");
    if (!header.ok) return Response.json({ error: { code: header.code, message: header.message } }, { status: 404 });
    const after = Number(new URL(request.url).searchParams.get("after") ?? "-1");
    return this.#stream!.open(after);
  }

  override async alarm(): Promise<void> {
    if (!this.#stores) return; // never created: nothing can be owed
    await faultPoint(this.sessionId, "in-alarm");
    await this.#kick();
  }

  override webSocketMessage(): void {
    // the stream is one-way; client messages are ignored
  }

  override webSocketClose(socket: WebSocket, code: number): void {
    socket.close(code === 1005 || code === 1006 ? 1000 : code, "closed");
  }

  // ---- internals ----

  #open(): SessionStores {
    if (this.#stores) return this.#stores;
    migrate(this.ctx.storage);
    const stores = new SessionStores(this.ctx.storage);
    this.#stream = new EventStream(this.ctx, stores.log);
    stores.stream = this.#stream;
    this.#stores = stores;
    const self = this;
    this.#driver = new TurnDriver<SessionHost>({
      stores,
      get sessionId() {
        return self.sessionId;
      },
      modelRoute: () => this.#header()?.options.model ?? this.env.DEFAULT_MODEL,
      model: () => modelFor(this.#header()?.options.model ?? this.env.DEFAULT_MODEL, this.#modelSettings()),
      system: () => this.#header()?.options.persona,
      tools: () => this.#tools.visible(this.#header()?.options.toolFilter),
      registry: this.#tools,
      host: this,
      inFlight: () => new Set(),
      onTurnEnd: () => {},
    });
    return stores;
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
      status: this.#owesWork() ? "running" : "idle",
      model: header.options.model,
      lastSeq: this.#stores!.log.nextSeq() - 1,
    };
    if (header.seedLength !== undefined) view.seedLength = header.seedLength;
    if (header.mode !== undefined) view.mode = header.mode;
    if (header.label !== undefined) view.label = header.label;
    return view;
  }

  #owesWork(): boolean {
    const stores = this.#stores!;
    const loop = stores.loop.get();
    if (loop.openTurn !== null) return true;
    return owesWork({ loop, pending: stores.inbox.pending(), unanswered: [], inFlight: new Set() });
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
    await this.ctx.storage.setAlarm(Date.now() + SAFETY_NET_MS);
    await faultPoint(this.sessionId, "after-accept");
    for (;;) {
      this.#wake = false;
      if (await driver.step()) continue;
      await this.#schedule();
      if (!this.#wake) return;
    }
  }

  /** Re-arms the one alarm to the earliest owed item, or clears it. Called last. */
  async #schedule(): Promise<void> {
    if (this.#owesWork()) await this.ctx.storage.setAlarm(Date.now() + 1);
    else await this.ctx.storage.deleteAlarm();
  }

  /** Boot-time repair: owed work with no alarm armed would never wake up. */
  async #repair(): Promise<void> {
    if (this.#owesWork() && (await this.ctx.storage.getAlarm()) === null) {
      await this.ctx.storage.setAlarm(Date.now() + 1);
    }
  }
}
