import { quote } from "../../../src/core/quote";
import { turnCallOf } from "../../../src/agent/call-keys";
import type { RunOrigin } from "../../../src/agent/host";
import { isEmptyContent } from "../../../src/contract/content";
import { deadlineDiagnostic, isDeadline } from "../../../src/contract/control";
import type { RunResultEnvelope } from "../../../src/contract/envelope";
import { fail, type Outcome, ok } from "../../../src/contract/errors";
import type { RunCounterpart, RunStart, RunView, SubagentResult } from "../../../src/contract/run";
import { isMcpFaceCall } from "../../../src/core/approvals";
import { renderForeground } from "../../../src/core/run-rendering";
import { loadPatternEngine } from "../../../src/core/json-schema-subset";
import { checkStart } from "../../../src/providers/start-checks";
import { DueTimer } from "../../kernel/due-timer";
import type { EnvelopeHandlers, SessionPart, StopCause } from "../../kernel/part";
import type { SessionContext } from "../../session/session-context";
import { markBelowMcpFace } from "../../store/approvals";
import type { RunRow } from "../../store/runs";
import { LocalRuns } from "../../transports/local-runs";
import type { ChildTransport, RunSettlement } from "../../transports/transport";

/**
 * One-shot runs, parent side (semantics.md §5): the one owner of every run this session awaits,
 * whatever runs it. A start is checked (start-checks.ts, in the documented order) and handed to
 * the transport of its provider's kind (transports/: the local one, `local`, is built here over
 * this owner; the others are given). Each run settles once (§5.3), with `subagent/end`, the
 * foreground tool call's answer and the long-poll waiters woken, in the transaction that records
 * the result, whichever transport reported it: through the session's `deliver` (`run-result`) or,
 * for a run the local transport publishes with its result already in, `settle`. A result that
 * outruns its run's publication waits in the run row and is settled by the publishing
 * transaction, so `subagent/start` precedes `end`. A tool call re-run after a crash re-attaches
 * to its run by call key. A run past its deadline settles `aborted` here, and its child is cancelled.
 */
export class OneShotRuns implements SessionPart, RunSettlement {
  readonly name = "one-shot runs";
  readonly envelopes: EnvelopeHandlers = {
    "run-result": (envelope) => {
      this.#record(envelope);
      return false;
    },
  };
  /** The local transport (spawn and fork: a child session of this deployment), which settles through this owner. */
  readonly local: LocalRuns;
  readonly #ctx: SessionContext;
  /** Every transport, the local one first: a start goes to the first that runs its provider's kind. */
  readonly #transports: readonly ChildTransport[];
  /** Long-poll waiters by run id (memory only: a waiter is a caller of this instance). */
  readonly #waiters = new Map<string, Set<() => void>>();
  /** The earliest deadline of a running run, while this instance runs. */
  readonly #deadlines = new DueTimer();

  /** `others`: the transports of out-of-process providers (another deployment, ACP, A2A). */
  constructor(ctx: SessionContext, others: readonly ChildTransport[]) {
    this.#ctx = ctx;
    this.local = new LocalRuns(ctx, this);
    this.#transports = [this.local, ...others];
  }

  /**
   * `origin`: the tool call that asks (absent: an API or RPC caller). The child's first turn joins
   * `request.trace`.
   */
  async start(request: RunStart, origin?: RunOrigin): Promise<Outcome<RunView>> {
    const { runs } = this.#ctx.stores;
    const existing = origin && runs.byCallKey(origin.callKey);
    if (existing) return ok(this.view(existing)); // a re-run tool call re-attaches
    // an output schema's patterns are compiled by the linear-time engine, loaded on first use
    if (request.outputSchema !== undefined) await loadPatternEngine();
    const checked = checkStart(request.provider, await this.#ctx.provider(request.provider), request);
    if (!checked.ok) return checked;
    const raced = origin && runs.byCallKey(origin.callKey);
    if (raced) return ok(this.view(raced));
    const { provider } = checked.value;
    const transport = this.#transports.find((t) => t.runs(provider.kind));
    if (!transport) return fail("NO_PROVIDER", `no transport runs providers of kind ${provider.kind}`);
    const started = await transport.start({ request, origin, ...checked.value });
    if (!started.ok) return started;
    if (request.deadlineSeconds !== undefined) this.#ctx.kick(); // its deadline gets the alarm and a timer
    return ok(this.view(runs.get(started.value)!));
  }

  view(run: RunRow): RunView {
    const view: RunView = {
      runId: run.runId,
      id: run.childId,
      provider: run.provider,
      local: run.local,
      state: run.state === "settled" ? "settled" : "running",
    };
    if (run.state === "settled" && run.result) view.result = run.result;
    if (run.taskId) view.taskId = run.taskId;
    if (!run.local) {
      const counterpart = this.#counterpart(run.runId);
      if (counterpart) view.counterpart = counterpart;
    }
    return view;
  }

  /** Resolves when the run settles or after `waitMs`, whichever is first. */
  async waitFor(runId: string, waitMs: number): Promise<RunRow | undefined> {
    const { runs } = this.#ctx.stores;
    const run = runs.get(runId);
    if (!run || run.state === "settled" || waitMs <= 0) return run;
    await new Promise<void>((resolve) => {
      const set = this.#waiters.get(runId) ?? new Set();
      this.#waiters.set(runId, set);
      const done = (): void => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0) this.#waiters.delete(runId);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      set.add(done);
    });
    return runs.get(runId);
  }

  /** Dispose: cancel the child (idempotent); the result arrives as `aborted` unless it was already in. */
  dispose(runId: string, reason?: string): Outcome<{ accepted: true }> {
    const run = this.#ctx.stores.runs.get(runId);
    if (!run) return fail("NOT_FOUND", `no run ${quote(runId)}`);
    if (run.state !== "settled") {
      this.#ctx.stores.transact(() => this.requestCancel(run, reason));
      this.#ctx.kick();
    }
    return ok({ accepted: true });
  }

  /** Inside a transaction: marks the run cancelled and has its transport cancel it. */
  requestCancel(run: RunRow, reason?: string): void {
    this.#ctx.stores.runs.requestCancel(run.runId);
    this.#transports.find((t) => t.owns(run))?.requestCancel(run, reason);
  }

  /** The earliest deadline of a run still working (README "Deadlines"). */
  /** The session is deleted: every run not settled is cancelled (remote, A2A and ACP runs are cancelled, never deleted). */
  onStop(_cause: StopCause, reason: string): undefined {
    for (const run of this.#ctx.stores.runs.unsettled())
      if (!run.cancelRequested) this.requestCancel(run, reason);
    return undefined;
  }

  /** While the session is deleted: the cancels of its runs on other deployments and agents still go out. */
  owesBeforeErase(): boolean {
    return this.#ctx.stores.runs.unsettledRemote().length > 0;
  }

  nextDue(): number | undefined {
    return this.#ctx.stores.runs.nextDeadline();
  }

  /**
   * Runs past their deadline end now: each settles `aborted` with a diagnostic naming the
   * deadline, and its child is cancelled (its counterpart, for a run of another process). The
   * alarm keeps the time, so this holds across evictions and restarts. True when one ended.
   */
  async step(): Promise<boolean> {
    return this.#endLateRuns();
  }

  /**
   * As a pass begins: while this session runs (or is about to run) a turn, a timer ends the runs
   * at their deadline even in the middle of its model call; an idle session has the alarm only,
   * so it holds no timer.
   */
  pump(): void {
    const due = this.nextDue();
    const busy =
      due !== undefined && (this.#ctx.stores.loop.get().openTurn !== null || this.#ctx.turns.owesStep());
    this.#deadlines.set(busy ? due : undefined, () => {
      if (this.#endLateRuns()) this.#ctx.kick();
    });
  }

  #endLateRuns(): boolean {
    const { stores } = this.#ctx;
    const late = stores.runs.pastDeadline(Date.now());
    if (late.length === 0) return false;
    stores.transact(() => {
      for (const run of late) {
        const seconds = Math.round((run.deadlineAt! - run.createdAt) / 1000);
        const diagnostic = deadlineDiagnostic(seconds, "run");
        if (!run.cancelRequested) this.requestCancel(run, diagnostic);
        const current = stores.runs.get(run.runId);
        if (current && current.state !== "settled")
          this.settle(current, { output: [], stopReason: "aborted", diagnostic });
      }
    });
    this.#ctx.kick(); // the cancels go out through the outbox
    return true;
  }

  /** A turn that ends while its foreground children still run cancels them (the tool's signal). */
  onTurnEnd(turn: number): void {
    for (const run of this.#ctx.stores.runs.foregroundOfTurn(turn))
      if (!run.cancelRequested) this.requestCancel(run);
  }

  /** Inside a transaction: settles the run once (a second call changes nothing). */
  settle(run: RunRow, reported: SubagentResult): void {
    const ctx = this.#ctx;
    // the child's subtree figure is counted here, never kept with the result
    const { subtreeUsage, ...result } = reported;
    const { runs, children, log } = ctx.stores;
    if (!runs.settle(run.runId, result)) return;
    children.release(run.childId);
    log.append("subagent/end", {
      runId: run.runId,
      provider: run.provider,
      id: run.childId,
      local: run.local,
      stopReason: result.stopReason,
      ...(isEmptyContent(result.output) ? {} : { lastAssistantMessage: result.output }),
      ...(result.usage ? { usage: result.usage } : {}),
    });
    // what the child used counts against this session's token budget (semantics.md §8)
    if (result.usage) ctx.stores.usage.addRuns(result.usage, run.local);
    // a local child's subtree is part of this session's tree (another deployment's is not)
    if (run.local && subtreeUsage) ctx.stores.usage.addBelow(subtreeUsage);
    // a foreground call of the model's answers its deferred tool call; an MCP client's call (a key
    // of another shape) waits on the run itself
    const call = run.callKey && !run.taskId ? turnCallOf(run.callKey) : undefined;
    if (call) {
      const rendered = renderForeground(result);
      ctx.turns.answerDeferred(
        call.turn,
        call.toolCallId,
        run.toolName ?? "subagent",
        [{ type: "text", text: rendered.text }],
        rendered.isError,
      );
    }
    const waiters = this.#waiters.get(run.runId);
    if (waiters) {
      queueMicrotask(() => {
        for (const wake of [...waiters]) wake();
      });
    }
  }

  /**
   * Inside the delivery transaction: a run's one result, from a child or a transport. A published
   * run settles now; one still being published keeps it for the publishing transaction; a settled
   * or unknown run, or a result from another child, changes nothing.
   */
  #record({ runId, from, result, belowMcpFace }: RunResultEnvelope): void {
    const { runs } = this.#ctx.stores;
    const run = runs.get(runId);
    if (!run || run.childId !== from) return;
    // a result from below an MCP face that this session's model reads (a face call's own run
    // answers the face's client) puts this session below the face (README "Approvals")
    if (belowMcpFace && !isMcpFaceCall(run.callKey ?? undefined)) markBelowMcpFace(this.#ctx.stores.header);
    // a run its deadline ended: the child's own result comes later; what it used still counts
    if (run.state === "settled" && isDeadline(run.result?.diagnostic) && result.usage)
      this.#ctx.stores.usage.addRuns(result.usage, run.local);
    if (run.state === "settled") return;
    if (run.state === "running") this.settle(run, result);
    else runs.keepEarlyResult(run.runId, result);
  }

  /** The far side of an out-of-process run, once its transport learned it. */
  #counterpart(runId: string): RunCounterpart | undefined {
    const { remoteRuns, acpRuns } = this.#ctx.stores;
    const far = remoteRuns.get(runId);
    if (far?.remoteId) return { kind: far.protocol, id: far.remoteId };
    const acp = acpRuns.get(runId);
    return acp?.sessionId ? { kind: "acp", id: acp.sessionId } : undefined;
  }
}
