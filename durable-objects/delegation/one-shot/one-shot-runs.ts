import type { RunOrigin } from "../../../src/agent/host";
import type { ChildInit } from "../../../src/contract/child-init";
import { isEmptyContent, toBlocks } from "../../../src/contract/content";
import type { RunResultEnvelope } from "../../../src/contract/envelope";
import { fail, type Outcome, ok } from "../../../src/contract/errors";
import { newRunId } from "../../../src/contract/ids";
import type { RunView, StartRequest, SubagentResult } from "../../../src/contract/run";
import { renderForeground } from "../../../src/core/run-rendering";
import { requestKey } from "../../../src/core/request-key";
import { abortedBeforeStart } from "../../../src/core/run-result";
import { checkStart } from "../../../src/providers/start-checks";
import { forkSeed, lineageOf, placeChild, reservedChildId } from "../child-spec";
import type { AcpRuns } from "../../transports/acp-runs";
import type { RemoteRuns } from "../../transports/remote-runs";
import type { RunRow } from "../../store/runs";
import type { SessionContext } from "../../session/session-context";

/**
 * How long a start that failed ambiguously (every `init` attempt errored; the child may exist)
 * waits for its caller's retry with the same childId before its child is cancelled.
 */
export const HELD_START_MS = 60_000;

/**
 * One-shot runs, parent side: reserve rows -> `init` the child (idempotent, caller-reserved id)
 * -> publish `subagent/start` -> apply the child's one result (`subagent/end`, the tool result,
 * long-poll waiters). A result that outruns the publication waits in the run row, so start always
 * precedes end; a dispose that outruns the child's creation leaves a tombstone the child honours.
 */
export class OneShotRuns {
  readonly #ctx: SessionContext;
  readonly #remote: RemoteRuns;
  readonly #acp: AcpRuns;
  /** Starts being published by this instance right now (repair must not race them). */
  readonly #publishing = new Set<string>();
  readonly #waiters = new Map<string, Set<() => void>>();

  constructor(ctx: SessionContext, remote: RemoteRuns, acp: AcpRuns) {
    this.#ctx = ctx;
    this.#remote = remote;
    this.#acp = acp;
  }

  async start(request: StartRequest, origin?: RunOrigin): Promise<Outcome<RunView>> {
    const ctx = this.#ctx;
    const { runs, children } = ctx.stores;
    const header = ctx.header()!;
    const existing = origin && runs.byCallKey(origin.callKey);
    if (existing) return ok(this.view(existing)); // a re-run tool call re-attaches
    const checked = checkStart(request.provider, await ctx.provider(request.provider), request);
    if (!checked.ok) return checked;
    const { provider, info, descriptor } = checked.value;
    const raced = origin && runs.byCallKey(origin.callKey);
    if (raced) return ok(this.view(raced));
    if (provider.kind === "remote" || provider.kind === "acp") {
      // another deployment (remote-runs.ts) or an ACP agent (acp-runs.ts) runs it: published here
      // at once, no child object
      const transport = provider.kind === "acp" ? this.#acp : this.#remote;
      const started = transport.start(request, origin, provider, descriptor);
      return started.ok ? ok(this.view(runs.get(started.value)!)) : started;
    }
    const key = requestKey(request);
    const reserved = origin === undefined ? reservedChildId(header, request) : undefined;
    const prior = reserved === undefined ? undefined : runs.byChildId(reserved);
    if (prior) return this.#reattach(prior, key);
    const placed = placeChild(ctx, header, { ...request, maxDepth: checked.value.maxDepth });
    if (!placed.ok) return placed;
    const { childId } = placed.value;
    const runId = newRunId();
    const seed = info.kind === "fork" ? forkSeed(ctx) : [];
    const spec: ChildInit = {
      v: 1,
      id: childId,
      runId,
      provider: provider.name,
      ...lineageOf(header),
      delegationDepth: placed.value.depth,
      mode: "one-shot",
      descriptor: descriptor,
      options: placed.value.options,
      prompt: toBlocks(request.prompt),
      ...(request.label === undefined ? {} : { label: request.label }),
      ...(seed.length === 0 ? {} : { seed }),
      ...(checked.value.outputSchema === undefined ? {} : { outputSchema: checked.value.outputSchema }),
      ...placed.value.placement,
    };
    const createdAt = Date.now();
    ctx.stores.transact(() => {
      children.own(childId, provider.name, "one-shot", request.label, createdAt);
      runs.insert(
        {
          runId,
          childId,
          provider: provider.name,
          local: true,
          callKey: origin?.callKey ?? null,
          taskId: origin?.background ? runs.nextTaskId() : null,
          toolName: origin?.toolName ?? null,
          spec,
          createdAt,
        },
        request.childId === undefined ? undefined : key,
      );
    });
    return this.#publish(runId);
  }

  /**
   * A start whose caller-reserved child id already has a run here: the same request is a retry
   * and gets that run (a held attempt is taken up again and its child created or re-attached, an
   * unpublished one is published now); any other request for the id is `DUPLICATE_CHILD`.
   */
  async #reattach(prior: RunRow, key: string): Promise<Outcome<RunView>> {
    const { runs, children } = this.#ctx.stores;
    if (prior.requestKey !== key)
      return fail("DUPLICATE_CHILD", `child ${prior.childId} was started with a different request`);
    if (prior.heldUntil !== null) {
      this.#ctx.stores.transact(() => {
        runs.unhold(prior.runId);
        if (!children.has(prior.childId))
          children.own(prior.childId, prior.provider, "one-shot", prior.spec.label, prior.createdAt);
      });
    }
    const run = runs.get(prior.runId)!;
    if (run.state === "starting" && !this.#publishing.has(run.runId)) return this.#publish(run.runId);
    return ok(this.view(run));
  }

  /**
   * Abandons held starts whose retry window has passed: the child the lost init may have created
   * is cancelled, and the attempt is forgotten. Resolves true when it abandoned one.
   */
  abandonExpiredHolds(): boolean {
    const { runs } = this.#ctx.stores;
    const expired = runs.heldExpired(Date.now());
    if (expired.length === 0) return false;
    this.#ctx.stores.transact(() => {
      for (const run of expired) {
        runs.delete(run.runId);
        this.#enqueueCancel(run);
      }
    });
    return true;
  }

  /** When the next held start's retry window ends (the alarm must come back then). */
  nextHoldExpiry(): number | undefined {
    return this.#ctx.stores.runs.nextHeldExpiry();
  }

  /** Creates the child (idempotently) and records `subagent/start`; settles at once if the result is in. */
  async #publish(runId: string): Promise<Outcome<RunView>> {
    const ctx = this.#ctx;
    const { runs, children, outbox, log } = ctx.stores;
    const run = runs.get(runId)!;
    const announce = (): void => {
      log.append("subagent/start", { runId, provider: run.provider, id: run.childId, local: run.local });
    };
    this.#publishing.add(runId);
    try {
      if (run.cancelRequested) {
        // disposed before the child was created: it never will be
        ctx.stores.transact(() => {
          if (!runs.markRunning(runId)) return;
          announce();
          outbox.markDelivered(`cancel:${runId}`);
          this.#settle(runs.get(runId)!, abortedBeforeStart());
        });
        return ok(this.view(runs.get(runId)!));
      }
      let created: Outcome<{ id: string }> | undefined;
      for (let attempt = 0; attempt < 3 && created === undefined; attempt++) {
        try {
          created = await ctx.session(run.childId, run.spec.locationHint).init(run.spec);
        } catch (error) {
          if (isOverloaded(error)) break; // never retry an overloaded object at once
        }
      }
      if (created === undefined || !created.ok) {
        // No child to speak of. A refusal forgets the reservation. After an ambiguous failure
        // (an init may have landed unseen) a caller-reserved id is held for the caller's retry,
        // which re-attaches or creates the child; any other attempt is forgotten and cancelled.
        const held = created === undefined && run.requestKey !== null;
        ctx.stores.transact(() => {
          children.forget(run.childId);
          if (held) runs.hold(runId, Date.now() + HELD_START_MS);
          else runs.delete(runId);
          if (created === undefined && !held) this.#enqueueCancel(run);
        });
        if (created === undefined) ctx.kick();
        return (
          created ??
          fail(
            "OVERLOADED",
            held
              ? "the child could not be created right now; retry the same request with the same childId"
              : "the child could not be created right now; try again",
          )
        );
      }
      ctx.stores.transact(() => {
        if (!runs.markRunning(runId)) return;
        announce();
        const pending = runs.get(runId)!;
        if (pending.result) this.#settle(pending, pending.result);
        else if (pending.cancelRequested) outbox.retryNow(`cancel:${runId}`); // the child exists now
      });
      if (runs.get(runId)?.cancelRequested) ctx.kick();
      return ok(this.view(runs.get(runId)!));
    } finally {
      this.#publishing.delete(runId);
    }
  }

  /** Finishes starts that an earlier instance reserved but did not publish (it was evicted). */
  async repairStarts(): Promise<boolean> {
    let repaired = false;
    if (!this.repairOwed()) return false;
    for (const run of this.#ctx.stores.runs.starting()) {
      if (this.#publishing.has(run.runId)) continue;
      repaired = (await this.#publish(run.runId)).ok || repaired;
    }
    return repaired;
  }

  /** Whether a reserved start waits for repair (the alarm must come back for it). */
  repairOwed(): boolean {
    return this.#ctx.stores.runs.startingIds().some((runId) => !this.#publishing.has(runId));
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
    if (!run) return fail("NOT_FOUND", `no run ${runId}`);
    if (run.state !== "settled") {
      this.#ctx.stores.transact(() => this.requestCancel(run, reason));
      this.#ctx.kick();
    }
    return ok({ accepted: true });
  }

  /** Inside a transaction: marks the run cancelled and queues the cancel for its child. */
  requestCancel(run: RunRow, reason?: string): void {
    this.#ctx.stores.runs.requestCancel(run.runId);
    if (run.local) this.#enqueueCancel(run, reason);
    else if (this.#acp.owns(run))
      this.#acp.requestCancel(run.runId); // session/cancel, then `aborted`
    else this.#remote.requestCancel(run.runId); // settled `aborted` by the transport, then interrupted there
  }

  /** A turn that ends while its foreground children still run cancels them (the tool's signal). */
  cancelForegroundOf(turn: number): void {
    for (const run of this.#ctx.stores.runs.foregroundOfTurn(turn))
      if (!run.cancelRequested) this.requestCancel(run);
  }

  /** Inside the delivery transaction: the child's one result. */
  applyResult(envelope: RunResultEnvelope): void {
    const { runs, sql } = this.#ctx.stores;
    const run = runs.get(envelope.runId);
    if (!run || run.childId !== envelope.from || run.state === "settled") return;
    if (run.state === "running") this.#settle(run, envelope.result);
    // still being published: keep the result for the publishing transaction
    else
      sql.exec(
        "UPDATE runs SET result = ? WHERE run_id = ? AND result IS NULL",
        JSON.stringify(envelope.result),
        run.runId,
      );
  }

  #enqueueCancel(run: RunRow, reason?: string): void {
    this.#ctx.stores.outbox.enqueue({
      v: 1,
      id: `cancel:${run.runId}`,
      from: run.spec.parentSession,
      to: run.childId,
      kind: "cancel-run",
      runId: run.runId,
      ...(reason === undefined ? {} : { reason }),
    });
  }

  #settle(run: RunRow, result: SubagentResult): void {
    const ctx = this.#ctx;
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
    });
    if (run.callKey && !run.taskId) {
      const split = run.callKey.indexOf(":");
      const rendered = renderForeground(result);
      ctx
        .driver()
        .answerDeferred(
          Number(run.callKey.slice(0, split)),
          run.callKey.slice(split + 1),
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

export function isOverloaded(error: unknown): boolean {
  return (
    typeof error === "object" && error !== null && (error as { overloaded?: unknown }).overloaded === true
  );
}
