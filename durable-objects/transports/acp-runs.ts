import { compact } from "../../src/core/compact";
import type { ContentBlock } from "../../src/contract/content";
import { fail, type Outcome, ok } from "../../src/contract/errors";
import { protocolMissing } from "../../src/protocols/protocol";
import type { SubagentResult } from "../../src/contract/run";
import { AcpConnection, type AcpTimeouts } from "../../src/providers/acp-client";
import { approvalScopesOf, failedResult, permissionOptionFor } from "../../src/providers/acp-protocol";
import type { ProviderKind } from "../../src/contract/provider";
import { prepareOutOfProcess, publishOutOfProcess, traceparentOfRun } from "./out-of-process";
import type { ResultSink } from "./far-side-runs";
import type { RunRow } from "../store/runs";
import type { SessionPart } from "../kernel/part";
import type { ChildTransport, TransportStart } from "./transport";
import type { SessionContext } from "../session/session-context";
import type { HeldDecision, HeldRequest } from "../approvals/approvals";

/** What holds the approvals of a run's permission requests. */
function holderOf(runId: string): string {
  return `acp:${runId}`;
}

/** Why a cancelled run's approvals were denied: the run was cancelled, and why where known. */
function cancelledReason(why?: string): string {
  return why ? `the run was cancelled (${why})` : "the run was cancelled";
}

/** The child id prefix of ACP runs (`acp:<runId>`): how the parent tells them from other runs. */
const PREFIX = "acp:";

/** A run is reconnected at most this many times after its object restarted (then it ends `error`). */
export const MAX_ACP_RESUMES = 3;

/** While a run's connection is open, the object's alarm is kept this close (to notice a restart). */
const ACP_WATCHDOG_MS = 15_000;

const LOST = "connection lost: the session restarted while the ACP agent was running";

/** Approvals held by runs (the session's approvals part): an agent's permission requests wait on them. */
export interface PermissionApprovals {
  ask(holder: string, request: HeldRequest): Promise<HeldDecision>;
  release(holder: string, reason: string): void;
}

/** An agent that could not be reached is tried this many times in all, backing off from `ACP_RETRY_MS`. */
export const ACP_CONNECT_ATTEMPTS = 5;
const ACP_RETRY_MS = 250;

/**
 * ACP delegation, parent side: a one-shot run handed to an external Agent Client Protocol server
 * over one WebSocket (acp-client.ts). Publication is local and immediate (the run row, its
 * `acp_runs` row and `subagent/start` in one transaction; the run id is parent-scoped); the
 * connection then lives in this object's memory and its one result is applied through the
 * session's ordinary `deliver`. The agent's session id is stored (with `subagent/remote`) before
 * the prompt goes out. A WebSocket cannot outlive its object, so a run whose object restarted
 * mid-run has no connection: the drive loop (or the alarm) reconnects it, loading the agent's
 * session (`session/load`) and prompting again there, at most MAX_ACP_RESUMES times; a run whose
 * agent does not offer `session/load` ends `error` saying so (a run whose prompt never went out
 * starts over), `aborted` if it had been cancelled. An agent that could not be reached (no answer
 * to the upgrade, HTTP 429 or 5xx) is tried again, ACP_CONNECT_ATTEMPTS times in all. The result never rejects: transport failures
 * are `error` with a bounded diagnostic, without credentials. The agent's permission requests (a
 * coding agent asking to edit a file or run a command) are approvals of this session (README
 * "Approvals") listing the scopes an approve can take (`scopes`: the agent's allow options):
 * approve answers with the agent's allow option of the decision's scope (`once` unless it says
 * `always`), deny with its reject option (acp-protocol.ts). A run that is cancelled answers its
 * pending requests `cancelled` at once and denies their approvals saying so; one that ends or
 * loses its connection denies what it still waits on.
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
  /** Runs waiting to try an unreachable agent again, with the timer of the next try (memory only). */
  readonly #retrying = new Map<string, ReturnType<typeof setTimeout>>();
  readonly #approvals: PermissionApprovals;

  constructor(ctx: SessionContext, sink: ResultSink, approvals: PermissionApprovals, timeouts?: AcpTimeouts) {
    this.#ctx = ctx;
    this.#sink = sink;
    this.#approvals = approvals;
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
    if (!ctx.protocols.acp) return fail("UNSUPPORTED_CAPABILITY", protocolMissing("acp"));
    const prepared = prepareOutOfProcess(ctx, request, provider, "acp");
    if (!prepared.ok) return prepared;
    const { runId, prompt } = prepared.value;
    // the ACP agent uses whatever model it is configured with
    ctx.stores.transact(() => {
      publishOutOfProcess(ctx, prepared.value, {
        provider,
        descriptor,
        request,
        origin,
        defaultModel: "acp-agent",
      });
      ctx.stores.acpRuns.insert({ runId, url: provider.url!, token: provider.token ?? null });
    });
    this.#connect(runId, prompt, undefined);
    ctx.kick(); // the next drive pass arms the watchdog alarm while the connection is open
    return ok(runId);
  }

  /**
   * The run is cancelled (by its parent, its deadline, the end of the turn that started it, its
   * session's deletion): its approvals are denied saying so, and the connection sends
   * `session/cancel` and answers the agent's pending permission requests `cancelled`; the result
   * arrives `aborted`. `reason`: why, where the canceller says.
   */
  requestCancel(run: RunRow, reason?: string): void {
    const live = this.#live.get(run.runId);
    const waiting = this.#retrying.get(run.runId);
    if (waiting) {
      clearTimeout(waiting);
      this.#retrying.delete(run.runId);
    }
    // never inside the caller's transaction
    queueMicrotask(() => {
      this.#approvals.release(holderOf(run.runId), cancelledReason(reason));
      live?.cancel();
    });
    if (!live) this.#ctx.kick(); // no connection here: the pump settles it
  }

  /** Applies owed results, and reconnects (or ends) the runs that lost their connection (a restart). */
  pump(): void {
    for (const [runId, result] of this.#owed) {
      this.#owed.delete(runId);
      this.#apply(runId, result);
    }
    for (const run of this.#orphans()) this.#reconnect(run);
  }

  /** Waits for the results being applied; true when there were any. */
  async idle(): Promise<boolean> {
    if (this.#applying.size === 0) return false;
    await Promise.all([...this.#applying.values()]);
    return true;
  }

  /**
   * Now, when a result is owed or a run lost its connection; while connections are open, a
   * watchdog a little later (an object that restarts loses them silently, and this alarm is what
   * wakes it to reconnect); otherwise nothing is due.
   */
  nextDue(): number | undefined {
    if (this.#owed.size > 0 || this.#orphans().length > 0) return Date.now();
    return this.#live.size + this.#retrying.size > 0 ? Date.now() + ACP_WATCHDOG_MS : undefined;
  }

  /**
   * A run without its connection: cancelled -> `aborted`; its prompt never went out (no agent
   * session yet) -> started over; its agent offers `session/load` -> resumed there (bounded);
   * otherwise `error` saying why.
   */
  #reconnect(run: RunRow): void {
    const { stores } = this.#ctx;
    this.#approvals.release(
      holderOf(run.runId),
      "the connection to the agent was lost; it asks again if it resumes",
    );
    const row = stores.acpRuns.get(run.runId);
    if (!row || run.cancelRequested) {
      this.#apply(run.runId, failedResult(LOST, "", []));
      return;
    }
    const secrets = row.token === null ? [] : [row.token];
    if (row.sessionId !== null && !row.canLoad) {
      const why = `${LOST}, and the agent cannot resume its session (it does not offer session/load)`;
      this.#apply(run.runId, failedResult(why, "", secrets));
      return;
    }
    const resumes = stores.transact(() => stores.acpRuns.countResume(run.runId));
    if (resumes > MAX_ACP_RESUMES) {
      this.#apply(
        run.runId,
        failedResult(`${LOST}, ${MAX_ACP_RESUMES} times; it is not resumed again`, "", secrets),
      );
      return;
    }
    this.#connect(run.runId, run.spec.prompt, row.sessionId ?? undefined);
  }

  /** Opens the run's connection: a new agent session, or `resume` (the agent's session) loaded. */
  #connect(runId: string, prompt: ContentBlock[], resume: string | undefined, attempts = 1): void {
    const row = this.#ctx.stores.acpRuns.get(runId)!;
    const target = { url: row.url, token: row.token, secrets: row.token === null ? [] : [row.token] };
    const traceparent = traceparentOfRun(this.#ctx.stores.runs.get(runId));
    const sdk = this.#ctx.protocols.acp?.sdk ?? (() => Promise.reject(new Error(protocolMissing("acp"))));
    const connection = new AcpConnection(target, prompt, {
      sdk,
      ...(this.#timeouts ? { timeouts: this.#timeouts } : {}),
      ...(resume === undefined ? {} : { resume }),
      ...compact({ traceparent }),
      onPermission: async (request) => {
        const provider = this.#ctx.stores.runs.get(runId)?.spec.provider ?? "acp";
        const { decision, scope } = await this.#approvals.ask(holderOf(runId), {
          toolCallId: String(request.toolCall.toolCallId ?? "").slice(0, 256) || "permission",
          tool: provider,
          args: { toolCall: request.toolCall, options: request.options },
          scopes: approvalScopesOf(request.options),
        });
        // a run cancelled meanwhile answers `cancelled` (its approval was denied saying so)
        return this.#unwanted(runId) ? undefined : permissionOptionFor(request.options, decision, scope);
      },
      onSession: (sessionId, canLoad) => {
        const { stores } = this.#ctx;
        stores.transact(() => {
          if (stores.runs.get(runId)?.state === "settled") return;
          stores.acpRuns.setSession(runId, sessionId, canLoad);
          stores.log.append("subagent/remote", { runId, kind: "acp", remoteId: sessionId.slice(0, 256) });
        });
      },
    });
    this.#live.set(runId, connection);
    void connection.result.then((result) => {
      this.#live.delete(runId);
      const cancelled = this.#ctx.stores.runs.get(runId)?.cancelRequested === true;
      this.#approvals.release(holderOf(runId), cancelled ? cancelledReason() : "the run ended");
      // the agent never saw this attempt: try again, backing off, while attempts remain
      if (connection.unreachable && attempts < ACP_CONNECT_ATTEMPTS && !this.#unwanted(runId)) {
        const timer = setTimeout(
          () => {
            this.#retrying.delete(runId);
            if (this.#unwanted(runId)) this.#ctx.kick();
            else this.#connect(runId, prompt, resume, attempts + 1);
          },
          ACP_RETRY_MS * 2 ** (attempts - 1),
        );
        this.#retrying.set(runId, timer);
        return;
      }
      this.#apply(runId, result);
    });
  }

  /** The run needs no connection any more: it was cancelled, settled or forgotten. */
  #unwanted(runId: string): boolean {
    const run = this.#ctx.stores.runs.get(runId);
    return run === undefined || run.state === "settled" || run.cancelRequested;
  }

  /** Unsettled ACP runs with no connection (and no result on its way) in this instance. */
  #orphans(): RunRow[] {
    return this.#ctx.stores.runs
      .unsettledRemote()
      .filter(
        (run) =>
          this.owns(run) &&
          !this.#live.has(run.runId) &&
          !this.#retrying.has(run.runId) &&
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
