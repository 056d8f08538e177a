import type { ContentBlock } from "../contract/content";
import type { SubagentResult } from "../contract/run";
import {
  answerAgentRequest,
  failedResult,
  initializeParams,
  newSessionParams,
  notification,
  promptParams,
  promptResult,
  readMessage,
  request,
  upgradeUrl,
} from "./acp-protocol";
import { scrub } from "./remote-protocol";

/**
 * One ACP run over one WebSocket: upgrade (Workers open client WebSockets with `fetch` and an
 * `Upgrade` header), `initialize` -> `session/new` (cwd "/") -> `session/prompt`, accumulating
 * `agent_message_chunk` texts as the output. `result` never rejects: every transport failure is
 * `error` with a bounded diagnostic free of the token; after `cancel` (a `session/cancel`
 * notification, then a bounded grace for the agent's answer) the result is `aborted`.
 */

export interface AcpTarget {
  url: string;
  token: string | null;
  /** Everything that must never appear in a diagnostic (the token). */
  secrets: readonly string[];
}

export interface AcpTimeouts {
  /** The upgrade, `initialize` and `session/new` each get this long. */
  setupMs: number;
  /** The prompt may run this long before the run ends as `error`. */
  promptMs: number;
  /** After `session/cancel`, the agent's answer is awaited this long. */
  cancelGraceMs: number;
}

export const ACP_TIMEOUTS: AcpTimeouts = { setupMs: 15_000, promptMs: 30 * 60_000, cancelGraceMs: 5_000 };

const CANCELLED = "the run was cancelled by its parent";

export class AcpConnection {
  readonly result: Promise<SubagentResult>;
  readonly #target: AcpTarget;
  readonly #timeouts: AcpTimeouts;
  #resolve!: (result: SubagentResult) => void;
  #socket: WebSocket | null = null;
  #sessionId: string | null = null;
  #output = "";
  #nextId = 1;
  #cancelled = false;
  #finished = false;
  readonly #pending = new Map<number, { ok: (value: unknown) => void; fail: (error: string) => void }>();
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(target: AcpTarget, prompt: readonly ContentBlock[], timeouts: AcpTimeouts = ACP_TIMEOUTS) {
    this.#target = target;
    this.#timeouts = timeouts;
    this.result = new Promise((resolve) => {
      this.#resolve = resolve;
    });
    this.#run(prompt).catch((error: unknown) => {
      const reason = error instanceof Error ? error.message : String(error);
      this.#fail(reason);
    });
  }

  /** Local cancellation: asks the agent to stop, and ends the run `aborted` within the grace. */
  cancel(): void {
    if (this.#finished || this.#cancelled) return;
    this.#cancelled = true;
    if (this.#socket === null || this.#sessionId === null) {
      this.#finish(failedResult(CANCELLED, this.#output, this.#target.secrets, "aborted"));
      return;
    }
    this.#send(notification("session/cancel", { sessionId: this.#sessionId }));
    this.#timer(this.#timeouts.cancelGraceMs, () =>
      this.#finish(failedResult(CANCELLED, this.#output, this.#target.secrets, "aborted")),
    );
  }

  async #run(prompt: readonly ContentBlock[]): Promise<void> {
    const headers: Record<string, string> = { Upgrade: "websocket" };
    if (this.#target.token !== null) headers.Authorization = `Bearer ${this.#target.token}`;
    const controller = new AbortController();
    const timer = this.#timer(this.#timeouts.setupMs, () => controller.abort(new Error("timed out")));
    let response: Response;
    try {
      response = await fetch(upgradeUrl(this.#target.url), { headers, signal: controller.signal });
    } catch (error) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return this.#fail(`no answer (${reason})`);
    } finally {
      this.#clear(timer);
    }
    const socket = response.webSocket;
    if (response.status !== 101 || socket === null) {
      await response.body?.cancel();
      return this.#fail(`the upgrade was refused: HTTP ${response.status}`);
    }
    if (this.#finished) return void socket.close(1000, "cancelled");
    socket.accept();
    this.#socket = socket;
    socket.addEventListener("message", (event) => this.#onMessage(event.data));
    socket.addEventListener("close", (event) => this.#fail(`the connection closed (code ${event.code})`));
    socket.addEventListener("error", () => this.#fail("the connection failed"));

    const init = await this.#call("initialize", initializeParams(), this.#timeouts.setupMs);
    if (init === undefined) return;
    const created = await this.#call("session/new", newSessionParams(), this.#timeouts.setupMs);
    if (created === undefined) return;
    const sessionId = (created as { sessionId?: unknown } | null)?.sessionId;
    if (typeof sessionId !== "string" || sessionId.length === 0)
      return this.#fail("session/new answered no sessionId");
    this.#sessionId = sessionId;
    if (this.#cancelled) return this.#finish(failedResult(CANCELLED, "", this.#target.secrets, "aborted"));
    const answer = await this.#call(
      "session/prompt",
      promptParams(sessionId, prompt),
      this.#timeouts.promptMs,
    );
    if (answer === undefined) return;
    this.#finish(promptResult(answer, this.#output, this.#target.secrets));
  }

  /** One request; `undefined` when it failed (the run is then finished already). */
  #call(method: string, params: unknown, timeoutMs: number): Promise<unknown> {
    if (this.#finished) return Promise.resolve(undefined);
    const id = this.#nextId++;
    return new Promise((resolve) => {
      const timer = this.#timer(timeoutMs, () => {
        this.#pending.delete(id);
        this.#fail(`${method} got no answer within ${Math.round(timeoutMs / 1000)} s`);
        resolve(undefined);
      });
      this.#pending.set(id, {
        ok: (value) => {
          this.#clear(timer);
          resolve(value ?? null);
        },
        fail: (error) => {
          this.#clear(timer);
          this.#fail(`${method} failed: ${error}`);
          resolve(undefined);
        },
      });
      this.#send(request(id, method, params));
    });
  }

  #onMessage(data: unknown): void {
    if (this.#finished) return;
    const message = typeof data === "string" ? readMessage(data) : undefined;
    if (message === undefined) {
      this.#fail("the agent sent a frame that is not JSON-RPC 2.0");
      return;
    }
    switch (message.kind) {
      case "chunk":
        this.#output += message.text;
        return;
      case "request":
        this.#send(answerAgentRequest(message.id, message.method));
        return;
      case "answer":
      case "failure": {
        const waiter = this.#pending.get(message.id);
        this.#pending.delete(message.id);
        if (message.kind === "answer") waiter?.ok(message.result);
        else waiter?.fail(message.error);
        return;
      }
      case "other":
        return;
    }
  }

  #send(frame: string): void {
    try {
      this.#socket?.send(frame);
    } catch (error) {
      this.#fail(`could not send (${error instanceof Error ? error.message : String(error)})`);
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
    for (const waiter of this.#pending.values()) waiter.fail("the run ended");
    this.#pending.clear();
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
