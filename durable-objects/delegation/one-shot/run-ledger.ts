import { turnCallOf } from "../../../src/agent/call-keys";
import { isEmptyContent } from "../../../src/contract/content";
import type { RunCounterpart, RunView, SubagentResult } from "../../../src/contract/run";
import { renderForeground } from "../../../src/core/run-rendering";
import type { SessionContext } from "../../session/session-context";
import type { RunRow } from "../../store/runs";

/**
 * The one-shot runs a session awaits, whatever runs them (semantics.md §5.3): each settles once,
 * with `subagent/end`, the foreground tool call's answer and the long-poll waiters woken, in the
 * transaction that records the result. A result that outruns its run's publication waits in the
 * run row and is settled by the publishing transaction, so `subagent/start` precedes `end`.
 */
export class RunLedger {
  readonly #ctx: SessionContext;
  readonly #waiters = new Map<string, Set<() => void>>();

  constructor(ctx: SessionContext) {
    this.#ctx = ctx;
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

  /** The far side of an out-of-process run, once its transport learned it. */
  #counterpart(runId: string): RunCounterpart | undefined {
    const { remoteRuns, acpRuns } = this.#ctx.stores;
    const far = remoteRuns.get(runId);
    if (far?.remoteId) return { kind: far.protocol, id: far.remoteId };
    const acp = acpRuns.get(runId);
    return acp?.sessionId ? { kind: "acp", id: acp.sessionId } : undefined;
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

  /**
   * Inside a transaction: a run's result from whoever ran it. A published run settles now; one
   * still being published keeps it for the publishing transaction; a settled or unknown run, or a
   * result from another child, changes nothing.
   */
  record(runId: string, from: string, result: SubagentResult): void {
    const { runs } = this.#ctx.stores;
    const run = runs.get(runId);
    if (!run || run.childId !== from || run.state === "settled") return;
    if (run.state === "running") this.settle(run, result);
    else runs.keepEarlyResult(run.runId, result);
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
    if (result.usage) ctx.stores.usage.addRuns(result.usage);
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
}
