import type { ContentBlock } from "../../src/contract/content";
import { type Outcome, ok } from "../../src/contract/errors";
import type { SubagentResult } from "../../src/contract/run";
import { AcpConnection, type AcpTimeouts } from "../../src/providers/acp-client";
import { failedResult } from "../../src/providers/acp-protocol";
import type { ProviderKind, ProviderRecord } from "../../src/contract/provider";
import { prepareOutOfProcess, publishOutOfProcess } from "./out-of-process";
import type { ResultSink } from "./remote-runs";
import type { RunRow } from "../store/runs";
import type { SessionPart } from "../session/part";
import type { ChildTransport, TransportStart } from "./transport";
import type { SessionContext } from "../session/session-context";

/** The child id prefix of ACP runs (`acp:<runId>`): how the parent tells them from other runs. */
const PREFIX = "acp:";

/**
 * ACP delegation, parent side: a one-shot run handed to an external Agent Client Protocol server
 * over one WebSocket (acp-client.ts). Publication is local and immediate (the run row and
 * `subagent/start` in one transaction; the run id is parent-scoped); the connection then lives in
 * this object's memory and its one result is applied through the session's ordinary `deliver`.
 * The provider token is never stored in the session. A WebSocket cannot outlive its object, so a
 * run whose object was evicted mid-run has no connection on restart: the drive loop (or the
 * alarm) ends it as `error` ("connection lost"), `aborted` if it had been cancelled. The result
 * never rejects: transport failures are `error` with a bounded diagnostic, without credentials.
 */
export class AcpRuns implements ChildTransport, SessionPart {
  readonly name = "ACP transport";
  readonly #ctx: SessionContext;
  readonly #sink: ResultSink;
  readonly #timeouts: AcpTimeouts | undefined;
  /** Open connections of this instance (memory only). */
  readonly #live = new Map<string, AcpConnection>();
  /** Results being applied right now (awaited by `drain`). */
  readonly #applying = new Map<string, Promise<void>>();
  /** Results whose application failed: retried by the next pump. */
  readonly #owed = new Map<string, SubagentResult>();

  constructor(ctx: SessionContext, sink: ResultSink, timeouts?: AcpTimeouts) {
    this.#ctx = ctx;
    this.#sink = sink;
    this.#timeouts = timeouts;
  }

  runs(kind: ProviderKind): boolean {
    return kind === "acp";
  }

  owns(run: RunRow): boolean {
    return !run.local && run.childId.startsWith(PREFIX);
  }

  /** Publishes an ACP run and opens its connection. Resolves the run id. */
  async start({ request, origin, provider, descriptor }: TransportStart): Promise<Outcome<string>> {
    const ctx = this.#ctx;
    const prepared = prepareOutOfProcess(ctx, request, provider, "acp");
    if (!prepared.ok) return prepared;
    const { runId, prompt } = prepared.value;
    // the ACP agent uses whatever model it is configured with
    ctx.stores.transact(() =>
      publishOutOfProcess(ctx, prepared.value, {
        provider,
        descriptor,
        request,
        origin,
        defaultModel: "acp-agent",
      }),
    );
    this.#connect(runId, provider, prompt);
    return ok(runId);
  }

  /** The parent cancelled the run: `session/cancel` to the agent; the result arrives `aborted`. */
  requestCancel(run: RunRow): void {
    const live = this.#live.get(run.runId);
    if (live)
      queueMicrotask(() => live.cancel()); // never inside the caller's transaction
    else this.#ctx.kick(); // no connection here: the pump settles it
  }

  /** Applies owed results and ends the runs that lost their connection (an eviction). */
  pump(): void {
    for (const [runId, result] of this.#owed) {
      this.#owed.delete(runId);
      this.#apply(runId, result);
    }
    for (const run of this.#orphans()) {
      const diagnostic = "connection lost: the session restarted while the ACP agent was running";
      this.#apply(run.runId, failedResult(diagnostic, "", []));
    }
  }

  /** Waits for the results being applied; true when there were any. */
  async idle(): Promise<boolean> {
    if (this.#applying.size === 0) return false;
    await Promise.all([...this.#applying.values()]);
    return true;
  }

  /** Now, when a result is owed or a run lost its connection; otherwise nothing is due. */
  nextDue(): number | undefined {
    return this.#owed.size > 0 || this.#orphans().length > 0 ? Date.now() : undefined;
  }

  #connect(runId: string, provider: ProviderRecord, prompt: ContentBlock[]): void {
    const token = provider.token ?? null;
    const target = { url: provider.url!, token, secrets: token === null ? [] : [token] };
    const connection = new AcpConnection(target, prompt, this.#timeouts, (sessionId) => {
      const { stores } = this.#ctx;
      stores.transact(() => {
        if (stores.runs.get(runId)?.state === "settled") return;
        stores.log.append("subagent/remote", { runId, kind: "acp", remoteId: sessionId.slice(0, 256) });
      });
    });
    this.#live.set(runId, connection);
    void connection.result.then((result) => {
      this.#live.delete(runId);
      this.#apply(runId, result);
    });
  }

  /** Unsettled ACP runs with no connection (and no result on its way) in this instance. */
  #orphans(): RunRow[] {
    return this.#ctx.stores.runs
      .unsettledRemote()
      .filter(
        (run) =>
          this.owns(run) &&
          !this.#live.has(run.runId) &&
          !this.#applying.has(run.runId) &&
          !this.#owed.has(run.runId),
      );
  }

  #apply(runId: string, result: SubagentResult): void {
    if (this.#applying.has(runId)) return;
    const work = this.#settle(runId, result)
      .catch((error: unknown) => {
        console.error("ACP result not applied; retrying", error instanceof Error ? error.message : error);
        this.#owed.set(runId, result);
      })
      .finally(() => {
        this.#applying.delete(runId);
        this.#ctx.kick();
      });
    this.#applying.set(runId, work);
  }

  /** Through `deliver` (de-duplicated by id); after a local cancellation any result is `aborted`. */
  async #settle(runId: string, result: SubagentResult): Promise<void> {
    const run = this.#ctx.stores.runs.get(runId);
    if (!run || run.state === "settled") return;
    const outcome = await this.#sink({
      v: 1,
      id: `result:${runId}`,
      from: run.childId,
      to: run.spec.parentSession,
      kind: "run-result",
      runId,
      result:
        run.cancelRequested && result.stopReason !== "aborted"
          ? {
              output: result.output,
              stopReason: "aborted",
              diagnostic: "the run was cancelled by its parent",
            }
          : result,
    });
    if (!outcome.ok) throw new Error(`could not apply the result: ${outcome.code}`);
  }
}
