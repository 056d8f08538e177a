import type { ClientContext } from "@agentclientprotocol/sdk";
import type { ContentBlock } from "../contract/content";
import type { SubagentResult } from "../contract/run";
import { checkOutboundUrl } from "../contract/outbound-url";
import {
  ACP_SCHEMES,
  failedResult,
  initializeParams,
  loadSessionParams,
  newSessionParams,
  offersLoadSession,
  type PermissionRequest,
  permissionRequestOf,
  promptParams,
  promptResult,
  upgradeUrl,
} from "./acp-protocol";
import {
  ACP_TIMEOUTS,
  type AcpRunOptions,
  type AcpSdk,
  type AcpTarget,
  type AcpTimeouts,
} from "./acp-run-options";
import { socketStream } from "./acp-socket-stream";
import { scrub } from "./remote-protocol";

export { ACP_TIMEOUTS, type AcpRunOptions, type AcpTarget, type AcpTimeouts } from "./acp-run-options";

/**
 * One ACP run over one WebSocket: upgrade (Workers open client WebSockets with `fetch` and an
 * `Upgrade` header), then the official ACP SDK's client side over the socket (its JSON-RPC
 * framing, dispatch and message checks): `initialize` -> `session/new` (its cwd the placeholder
 * ACP_SESSION_CWD: where the agent works is its side's to decide) -> `session/prompt`,
 * accumulating `agent_message_chunk` texts as the output; the agent's permission requests go to
 * `onPermission` (an approval of the session that owns the run; without one they are answered
 * `cancelled`, and `cancel` answers those still pending `cancelled` at once, as ACP requires of a
 * client that cancels a prompt) and its other requests are refused. A connection that resumes a
 * run (its object restarted) sends `session/load` for the run's session instead of
 * `session/new`, when the agent's `initialize` offers it (the history it replays is not output),
 * then `session/cancel` (an agent that outlived the old connection stops the old prompt) and
 * the prompt again in that session. `result` never rejects: every transport failure is
 * `error` with a bounded diagnostic free of the token; after `cancel` (a `session/cancel`
 * notification, then a bounded grace for the agent's answer) the result is `aborted`.
 */

const CANCELLED = "the run was cancelled by its parent";

export class AcpConnection {
  readonly result: Promise<SubagentResult>;
  readonly #target: AcpTarget;
  readonly #timeouts: AcpTimeouts;
  #resolve!: (result: SubagentResult) => void;
  #socket: WebSocket | null = null;
  #context: ClientContext | null = null;
  #sessionId: string | null = null;
  #output = "";
  #cancelled = false;
  #finished = false;
  /** Settles every request in flight when the run ends (the SDK's promises may never settle then). */
  readonly #ended = new AbortController();
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  /** The agent's permission requests not answered yet: `cancel` answers each `cancelled`. */
  readonly #asking = new Set<() => void>();

  readonly #onSession: ((sessionId: string, canLoad: boolean) => void) | undefined;
  readonly #resume: string | undefined;
  readonly #onPermission: AcpRunOptions["onPermission"];
  readonly #traceparent: string | undefined;
  /** While `session/load` replays the session's history, its updates are not this run's output. */
  #replaying = false;
  #unreachable = false;

  readonly #sdk: () => Promise<AcpSdk>;
  #acp: AcpSdk | undefined;

  constructor(target: AcpTarget, prompt: readonly ContentBlock[], options: AcpRunOptions) {
    this.#sdk = options.sdk;
    this.#target = target;
    this.#timeouts = options.timeouts ?? ACP_TIMEOUTS;
    this.#onSession = options.onSession;
    this.#resume = options.resume;
    this.#onPermission = options.onPermission;
    this.#traceparent = options.traceparent;
    this.result = new Promise((resolve) => {
      this.#resolve = resolve;
    });
    this.#run(prompt).catch((error: unknown) => {
      const reason = error instanceof Error ? error.message : String(error);
      this.#fail(reason);
    });
  }

  /**
   * Whether the run failed before the agent saw anything: no answer to the upgrade, or a refusal
   * that may pass (HTTP 429 or 5xx). Such a run may be tried again as if it never started.
   */
  get unreachable(): boolean {
    return this.#unreachable && !this.#cancelled;
  }

  /** Local cancellation: asks the agent to stop, and ends the run `aborted` within the grace. */
  cancel(): void {
    if (this.#finished || this.#cancelled) return;
    this.#cancelled = true;
    for (const answerCancelled of this.#asking) answerCancelled();
    if (this.#socket === null || this.#sessionId === null) {
      this.#finish(failedResult(CANCELLED, this.#output, this.#target.secrets, "aborted"));
      return;
    }
    void this.#context
      ?.notify(this.#acp!.methods.agent.session.cancel, { sessionId: this.#sessionId })
      .catch(() => {});
    this.#timer(this.#timeouts.cancelGraceMs, () =>
      this.#finish(failedResult(CANCELLED, this.#output, this.#target.secrets, "aborted")),
    );
  }

  async #run(prompt: readonly ContentBlock[]): Promise<void> {
    const acp = await this.#sdk();
    this.#acp = acp;
    // checked on every connection too: a provider registered before the rule may break it
    const problem = checkOutboundUrl(this.#target.url, { schemes: ACP_SCHEMES });
    if (problem !== undefined) return this.#fail(`the agent's URL ${problem}: not connected`);
    const headers: Record<string, string> = { Upgrade: "websocket" };
    if (this.#target.token !== null) headers.Authorization = `Bearer ${this.#target.token}`;
    const controller = new AbortController();
    const timer = this.#timer(this.#timeouts.setupMs, () => controller.abort(new Error("timed out")));
    let response: Response;
    try {
      // never followed: a 3xx is a refused upgrade, so the token never travels to another address
      response = await fetch(upgradeUrl(this.#target.url), {
        headers,
        signal: controller.signal,
        redirect: "manual",
      });
    } catch (error) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      this.#unreachable = true;
      return this.#fail(`no answer (${reason})`);
    } finally {
      this.#clear(timer);
    }
    const socket = response.webSocket;
    if (response.status !== 101 || socket === null) {
      await response.body?.cancel();
      this.#unreachable = response.status === 429 || response.status >= 500;
      return this.#fail(`the upgrade was refused: HTTP ${response.status}`);
    }
    if (this.#finished) return void socket.close(1000, "cancelled");
    socket.accept();
    this.#socket = socket;
    socket.addEventListener("close", (event) => this.#fail(`the connection closed (code ${event.code})`));
    socket.addEventListener("error", () => this.#fail("the connection failed"));

    const app = acp
      .client({ name: "subagents-edge" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        const update = params.update as {
          sessionUpdate?: string;
          content?: { type?: string; text?: string };
        };
        if (
          !this.#replaying &&
          update.sessionUpdate === "agent_message_chunk" &&
          update.content?.type === "text"
        )
          this.#output += update.content.text ?? "";
      })
      .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
        const optionId = await this.#permission(permissionRequestOf(params));
        return optionId === undefined || this.#cancelled
          ? { outcome: { outcome: "cancelled" as const } }
          : { outcome: { outcome: "selected" as const, optionId } };
      });
    await app.connectWith(
      socketStream(socket, (reason) => this.#fail(reason), this.#ended.signal),
      async (context) => {
        this.#context = context;
        const init = await this.#call(
          context,
          acp.methods.agent.initialize,
          initializeParams(),
          this.#timeouts.setupMs,
        );
        if (init === undefined) return;
        const canLoad = offersLoadSession(init);
        const sessionId =
          this.#resume === undefined
            ? await this.#newSession(context, canLoad)
            : await this.#load(context, canLoad);
        if (sessionId === undefined) return;
        if (this.#cancelled)
          return this.#finish(failedResult(CANCELLED, "", this.#target.secrets, "aborted"));
        const answer = await this.#call(
          context,
          acp.methods.agent.session.prompt,
          promptParams(sessionId, prompt, this.#traceparent),
          this.#timeouts.promptMs,
        );
        if (answer === undefined) return;
        this.#finish(promptResult(answer, this.#output, this.#target.secrets));
      },
    );
  }

  /**
   * The option to answer a permission request with, from `onPermission`; undefined (`cancelled`)
   * without one, once the run is cancelled or finished, or when `cancel` comes first.
   */
  async #permission(request: PermissionRequest): Promise<string | undefined> {
    const ask = this.#onPermission;
    if (ask === undefined || this.#finished || this.#cancelled) return undefined;
    let answerCancelled!: () => void;
    const cancelled = new Promise<undefined>((resolve) => {
      answerCancelled = () => resolve(undefined);
    });
    this.#asking.add(answerCancelled);
    try {
      return await Promise.race([ask(request), cancelled]);
    } finally {
      this.#asking.delete(answerCancelled);
    }
  }

  /** `session/new`; the session id, told to `onSession` before anything is prompted. */
  async #newSession(context: ClientContext, canLoad: boolean): Promise<string | undefined> {
    const created = await this.#call(
      context,
      this.#acp!.methods.agent.session.new,
      newSessionParams(),
      this.#timeouts.setupMs,
    );
    if (created === undefined) return undefined;
    const sessionId = (created as { sessionId?: unknown } | null)?.sessionId;
    if (typeof sessionId !== "string" || sessionId.length === 0) {
      this.#fail("session/new answered no sessionId");
      return undefined;
    }
    this.#sessionId = sessionId;
    try {
      this.#onSession?.(sessionId, canLoad);
    } catch {
      // recording it is best effort; the run goes on
    }
    return sessionId;
  }

  /** `session/load` of the session being resumed (its replayed history is not output). */
  async #load(context: ClientContext, canLoad: boolean): Promise<string | undefined> {
    const sessionId = this.#resume!;
    if (!canLoad) {
      this.#fail("the agent cannot resume its session (its initialize does not offer session/load)");
      return undefined;
    }
    this.#sessionId = sessionId;
    this.#replaying = true;
    const loaded = await this.#call(
      context,
      this.#acp!.methods.agent.session.load,
      loadSessionParams(sessionId),
      this.#timeouts.setupMs,
    );
    this.#replaying = false;
    if (loaded === undefined) return undefined;
    // an agent that outlived the old connection may still run the old prompt: stop it first
    await context.notify(this.#acp!.methods.agent.session.cancel, { sessionId }).catch(() => {});
    return sessionId;
  }

  /** One request with its deadline; `undefined` when it failed (the run is then finished already). */
  async #call(context: ClientContext, method: string, params: unknown, timeoutMs: number): Promise<unknown> {
    if (this.#finished) return undefined;
    const deadline = new AbortController();
    const timer = this.#timer(timeoutMs, () => deadline.abort());
    const stop = AbortSignal.any([deadline.signal, this.#ended.signal]);
    try {
      const answer = await new Promise<unknown>((resolve, reject) => {
        stop.addEventListener("abort", () => reject(new Error("stopped")), { once: true });
        context.request(method, params).then(resolve, reject);
      });
      return answer ?? null;
    } catch (error) {
      if (deadline.signal.aborted)
        this.#fail(`${method} got no answer within ${Math.round(timeoutMs / 1000)} s`);
      else if (!this.#finished) this.#fail(`${method} failed: ${errorText(error)}`);
      return undefined;
    } finally {
      this.#clear(timer);
    }
  }

  #fail(reason: string): void {
    if (this.#finished) return;
    const text = this.#cancelled ? CANCELLED : `the ACP agent at ${this.#where()}: ${reason}`;
    this.#finish(
      failedResult(text, this.#output, this.#target.secrets, this.#cancelled ? "aborted" : "error"),
    );
  }

  #finish(result: SubagentResult): void {
    if (this.#finished) return;
    this.#finished = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#ended.abort();
    try {
      this.#socket?.close(1000, "done");
    } catch {
      // already closed
    }
    this.#resolve(
      this.#cancelled && result.stopReason !== "aborted"
        ? { output: result.output, stopReason: "aborted", diagnostic: CANCELLED }
        : result,
    );
  }

  /** The agent's origin only (no path, query or credentials), scrubbed. */
  #where(): string {
    const url = URL.canParse(this.#target.url) ? new URL(this.#target.url) : null;
    return scrub(url ? `${url.protocol}//${url.host}` : "(unparsable url)", this.#target.secrets);
  }

  #timer(ms: number, then: () => void): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      then();
    }, ms);
    this.#timers.add(timer);
    return timer;
  }

  #clear(timer: ReturnType<typeof setTimeout>): void {
    clearTimeout(timer);
    this.#timers.delete(timer);
  }
}

/** A JSON-RPC failure as the agent stated it (`JSON-RPC error <code>: <message>`), or the error's message. */
function errorText(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  if (typeof e?.code === "number") return `JSON-RPC error ${e.code}: ${String(e.message ?? "no message")}`;
  return error instanceof Error ? error.message : String(error);
}
