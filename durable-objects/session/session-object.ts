import { fail } from "../../src/contract/errors";
import { failure } from "../../src/contract/respond";
import { CALLER_HEADER, type Caller } from "../../src/contract/session";
import type { SessionRpc } from "../../src/contract/session-api";
import { faultPoint } from "../../src/core/faults";
import type { Deployment } from "../../src/platform/deployment";
import type { ObjectHost } from "../host/port";
import { authorize, type DispatchTarget, dispatch } from "../kernel/dispatch";
import type { Method } from "../kernel/methods";
import { migrate, tablesIn } from "../store/schema";
import { SESSION_METHODS, type SessionMethods } from "./session-methods";
import { assembleParts, type Parts } from "./session-parts";
import { subscriberCap } from "../kernel/subscribers";

/** After this many platform retries of a failing alarm, the alarm re-arms itself instead of throwing. */
const ALARM_RETRIES_BEFORE_SELF_REARM = 4;
const SELF_REARM_MS = 30_000;

/**
 * One session: header, append-only log, inbox, turn loop, runs, children and outbox, in its own
 * SQLite database, on a host (host/port.ts). A thin shell: its RPC methods are the features'
 * declarations (session-methods.ts), each call dispatched by the kernel (kernel/dispatch.ts),
 * which authorizes it and answers for a session absent or being deleted; storage lives in the
 * stores, decisions in `src/` and in the parts (session-parts.ts assembles them), and the drive
 * loop runs their work. On Workers, the Durable Object class a Worker exports forwards every call
 * here (src/worker/object-shells.ts).
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the merged interface's methods are installed on the prototype by the static block
export class SessionObject implements SessionRpc {
  protected readonly host: ObjectHost;
  #parts: Parts | undefined;
  /** Erased by a deletion: nothing is created in this object again by this instance. */
  #erased = false;
  readonly #deployment: Deployment;
  /** The object's tables when this instance started (none: the first `#open` creates the schema). */
  readonly #tables: ReadonlySet<string>;
  readonly #target: DispatchTarget<Parts>;

  /**
   * The object's implementation, built by its host before the instance's first event, with the
   * deployment's tools and models: a session that exists arms the work it owes (a restart's)
   * before any call runs. An object that was never created stays empty: probing unknown ids
   * stores nothing.
   */
  static async open(host: ObjectHost, deployment: Deployment): Promise<SessionObject> {
    const session = new SessionObject(host, deployment);
    if (session.#tables.has("meta")) await session.#open().loop.armIfOwed();
    return session;
  }

  private constructor(host: ObjectHost, deployment: Deployment) {
    this.host = host;
    this.#deployment = deployment;
    this.#tables = tablesIn(host.storage.sql);
    this.#target = {
      current: () => this.#parts,
      open: () => this.#open(),
      erased: () => this.#erased,
      header: (parts) => (parts.deletion.deleting() ? undefined : parts.stores.header.get()),
      deleting: (parts) => parts.deletion.deleting(),
      // every caller's request is a chance to notice owed work whose alarm was lost
      touched: (parts) => parts.loop.touched(),
      objects: host.objects,
    };
  }

  static {
    // the declared methods, one prototype method each (what the host's RPC reaches), each
    // dispatched by the kernel
    for (const [name, method] of Object.entries(SESSION_METHODS) as [string, Method<Parts>][])
      Object.defineProperty(SessionObject.prototype, name, {
        value: function forward(this: SessionObject, ...args: unknown[]) {
          return dispatch(this.#target, method, args);
        },
        writable: true,
        configurable: true,
      });
  }

  // ---- the host's entry points ----

  /**
   * The event stream (WebSocket upgrade, or SSE with `?transport=sse`) and the MCP face
   * (`/mcp`). The Worker passes the authenticated caller in a header.
   */
  async fetch(request: Request): Promise<Response> {
    const caller = callerOf(request);
    const url = new URL(request.url);
    // an MCP client acts on the session's tools: the session's (or an admin's) authority
    const session = caller
      ? authorize(this.#target, caller, url.pathname === "/mcp" ? "act" : "read")
      : fail("UNAUTHENTICATED", "no caller");
    if (!session.ok) return failure(session);
    const { mcp, subscribers } = session.value.parts;
    if (url.pathname === "/mcp") return mcp.handle(request);
    const cap = subscriberCap(this.host.vars.MAX_SUBSCRIBERS_PER_SESSION);
    return subscribers.serve(request, url.searchParams, cap);
  }

  /** The host's alarm fired (`retryCount`: how many times the host retried it after a failure). */
  async alarm(info?: { retryCount?: number }): Promise<void> {
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
      await this.host.storage.setAlarm(Date.now() + SELF_REARM_MS);
    }
  }

  webSocketMessage(): void {
    // the stream is one-way; client messages are ignored
  }

  webSocketClose(socket: WebSocket, code: number): void {
    socket.close(code === 1005 || code === 1006 ? 1000 : code, "closed");
  }

  // ---- wiring ----

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
    await this.host.storage.deleteAlarm();
    await this.host.storage.deleteAll();
  }

  #open(): Parts {
    if (this.#parts) return this.#parts;
    // the tables as they are once migrated: a migration may create one (moving rows into it)
    const tables = new Set(this.#tables);
    const created = migrate(this.host.storage, undefined, { exists: tables.has("meta"), tables });
    const eraser = { erase: () => this.#erase() };
    this.#parts = assembleParts(this.host, this.#deployment, eraser, { created, tables });
    return this.#parts;
  }
}

/** The declared methods (installed on the prototype above). */
export interface SessionObject extends SessionMethods {}

/** The authenticated caller the Worker passed with a forwarded request (none: unauthenticated). */
function callerOf(request: Request): Caller | null {
  return JSON.parse(request.headers.get(CALLER_HEADER) ?? "null") as Caller | null;
}
