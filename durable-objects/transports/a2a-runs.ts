import type { ProviderKind } from "../../src/contract/provider";
import { fail, type Outcome, ok } from "../../src/contract/errors";
import { compact } from "../../src/core/compact";
import type { A2aTarget } from "../../src/providers/a2a-client";
import { protocolMissing } from "../../src/protocols/protocol";
import { newCallbackSecret, pollDelayMs, transportResult } from "../../src/providers/remote-protocol";
import type { SessionContext } from "../session/session-context";
import type { RemoteRow } from "../store/remote-store";
import type { RunRow } from "../store/runs";
import { FarSideRuns, type ResultSink } from "./far-side-runs";
import { prepareOutOfProcess, publishOutOfProcess, traceparentOfRun } from "./out-of-process";
import type { ChildTransport, TransportStart } from "./transport";

/** The first poll of a task's state (then doubling to 30 s): an A2A agent does not call back. */
const FIRST_POLL_MS = 250;

/**
 * A2A delegation (docs/semantics.md §12): a one-shot run handed to any Agent2Agent agent. The run
 * is published at once like every far-side run; its first step sends the prompt as one message
 * (message id from the run id, not waiting for the task), and the task id the agent answers is
 * stored with the run in the same transaction as its `subagent/remote` event, so a parent that
 * restarts goes on reading the same task (GetTask, backing off) and learns one result. A message
 * resent after a crash before that commit carries the same message id: an agent that keeps
 * message ids (this runtime's own A2A face does) answers the same task. A cancelled run settles
 * `aborted` here at once and CancelTask stops the task there.
 */
export class A2aRuns extends FarSideRuns implements ChildTransport {
  readonly name = "a2a transport";
  protected readonly farSide = "the A2A agent";

  constructor(ctx: SessionContext, sink: ResultSink) {
    super(ctx, sink, "a2a");
  }

  runs(kind: ProviderKind): boolean {
    return kind === "a2a";
  }

  /** Publishes an A2A run (no I/O); its first message goes out with the next drive. Resolves the run id. */
  async start({ request, origin, provider, descriptor }: TransportStart): Promise<Outcome<string>> {
    const ctx = this.ctx;
    if (!ctx.protocols.a2a) return fail("UNSUPPORTED_CAPABILITY", protocolMissing("a2a"));
    const prepared = prepareOutOfProcess(ctx, request, provider, "a2a");
    if (!prepared.ok) return prepared;
    const { runId, prompt, depth } = prepared.value;
    const now = Date.now();
    ctx.stores.transact(() => {
      publishOutOfProcess(
        ctx,
        prepared.value,
        { provider, descriptor, request, origin, defaultModel: "a2a-agent" },
        now,
      );
      ctx.stores.remoteRuns.insert(
        {
          protocol: "a2a",
          runId,
          url: provider.url!,
          token: provider.token ?? null,
          // never used: only runs on another deployment of this runtime accept a signed callback
          secret: newCallbackSecret(),
          request: { prompt, ...compact({ label: request.label }), delegationDepth: depth },
        },
        now,
      );
    });
    ctx.kick();
    return ok(runId);
  }

  protected phaseStep(run: RunRow, row: RemoteRow): Promise<void> {
    // a run accepted before the deployment dropped the a2a protocol ends saying so
    if (!this.ctx.protocols.a2a)
      return this.end(run, row, transportResult("error", protocolMissing("a2a"), this.secretsOf(row)));
    return row.phase === "create" ? this.#send(run, row) : this.#poll(run, row);
  }

  protected async stopFarSide(row: RemoteRow) {
    if (!this.ctx.protocols.a2a)
      return { ok: false as const, permanent: true, error: protocolMissing("a2a") };
    const { cancelTask } = await this.#client();
    const answer = await cancelTask(this.#target(row), row.remoteId!);
    return answer.ok ? { ok: true as const } : answer;
  }

  /** The A2A client (the official SDK), loaded by a session's first A2A run, not at the Worker's start. */
  #client() {
    return this.ctx.protocols.a2a!.client();
  }

  async #send(run: RunRow, row: RemoteRow): Promise<void> {
    const { progressOf, runMessage, sendRunMessage } = await this.#client();
    const answer = await sendRunMessage(this.#target(row, run), runMessage(run.runId, row.request.prompt));
    if (!answer.ok) return this.failed(run, row, answer, "accept the task");
    const progress = progressOf(answer.value, this.secretsOf(row));
    const taskId = "status" in answer.value ? answer.value.id : undefined;
    const now = Date.now();
    const { stores } = this.ctx;
    stores.transact(() => {
      if (stores.remoteRuns.get(run.runId)?.phase !== "create" || taskId === undefined) return;
      stores.remoteRuns.advance(run.runId, {
        phase: "await",
        nextAt: now + pollDelayMs(0, FIRST_POLL_MS),
        now,
        remoteId: taskId,
      });
      stores.log.append("subagent/remote", { runId: run.runId, kind: "a2a", remoteId: taskId });
    });
    // an agent may answer with a message (no task) or a task that is already over
    if (progress.done) await this.settle(run, progress.result);
  }

  async #poll(run: RunRow, row: RemoteRow): Promise<void> {
    const { progressOf, readTask } = await this.#client();
    const answer = await readTask(this.#target(row, run), row.remoteId!);
    if (!answer.ok) return this.failed(run, row, answer, "show the task");
    const progress = progressOf(answer.value, this.secretsOf(row));
    if (progress.done) {
      await this.settle(run, progress.result);
      return;
    }
    const now = Date.now();
    const nextAt = Math.min(
      now + pollDelayMs(row.polls + 1, FIRST_POLL_MS),
      now + this.ctx.remoteSettings.deadlineMs,
    );
    const { stores } = this.ctx;
    stores.transact(() => {
      if (stores.remoteRuns.get(run.runId)?.phase !== "await") return;
      stores.remoteRuns.advance(run.runId, {
        phase: "await",
        nextAt,
        now,
        poll: { cursor: row.cursor, output: null },
      });
    });
  }

  /** `run`: the run a request is for (its start's span goes as `traceparent`). */
  #target(row: RemoteRow, run?: RunRow): A2aTarget {
    return { url: row.url, token: row.token, traceparent: traceparentOfRun(run) };
  }
}
