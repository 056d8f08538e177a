import { deadlineOf } from "../../src/contract/control";
import { compact } from "../../src/core/compact";
import { turnCallOf } from "../../src/agent/call-keys";
import type { ChildInit } from "../../src/contract/child-init";
import { toBlocks } from "../../src/contract/content";
import { fail, type Outcome, ok } from "../../src/contract/errors";
import type { ProviderKind } from "../../src/contract/provider";
import { newRunId } from "../../src/contract/ids";
import { requestKey } from "../../src/core/request-key";
import { abortedBeforeStart } from "../../src/core/run-result";
import { initChild, StartsInFlight } from "../delegation/child-start";
import { childBudget, childInit, forkSeed, placeChild, reservedChildId } from "../delegation/child-spec";
import type { SessionPart } from "../kernel/part";
import type { SessionContext } from "../session/session-context";
import type { RunRow } from "../store/runs";
import type { ChildTransport, RunSettlement, TransportStart } from "./transport";

/**
 * How long a start that failed ambiguously (every `init` attempt errored; the child may exist)
 * waits for its caller's retry with the same childId before its child is cancelled
 * (semantics.md §10.4).
 */
export const HELD_START_MS = 60_000;

/**
 * The local transport (spawn and fork): a one-shot child is a session of this deployment.
 * Start: place and reserve the rows -> `init` the child (idempotent by the caller-reserved id,
 * under the one retry policy of child-start.ts) -> publish `subagent/start`; a start whose
 * caller-reserved id already has a run is a retry of it (same request) or `DUPLICATE_CHILD`.
 * Cancel: a `cancel-run` through the outbox (a cancel that outruns the child's creation leaves a
 * tombstone the child honours). The child's one result comes back through the outbox.
 */
export class LocalRuns implements ChildTransport, SessionPart {
  readonly name = "local transport";
  readonly #ctx: SessionContext;
  /** The runs' owner (delegation/one-shot/one-shot-runs.ts), which settles what this publishes. */
  readonly #owner: RunSettlement;
  /** Starts being published by this instance right now, by run id, with their outcome. */
  readonly #publishing = new StartsInFlight<Outcome<string>>();

  constructor(ctx: SessionContext, owner: RunSettlement) {
    this.#ctx = ctx;
    this.#owner = owner;
  }

  runs(kind: ProviderKind): boolean {
    return kind === "spawn" || kind === "fork";
  }

  owns(run: RunRow): boolean {
    return run.local;
  }

  async start(start: TransportStart): Promise<Outcome<string>> {
    const ctx = this.#ctx;
    const { runs, children } = ctx.stores;
    const header = ctx.header()!;
    const { request, origin, provider, info } = start;
    // only a caller-reserved id makes a start retryable, so only then is its request's key needed
    const key = request.childId === undefined ? undefined : requestKey(request);
    const reserved = origin === undefined ? reservedChildId(header, request) : undefined;
    const prior = reserved === undefined ? undefined : runs.byChildId(reserved);
    if (prior && key !== undefined) return this.#reattach(prior, key);
    const placed = placeChild(ctx, header, { ...request, maxDepth: start.maxDepth });
    if (!placed.ok) return placed;
    const runId = newRunId();
    const spec: ChildInit = {
      ...childInit(header, placed.value, {
        runId,
        provider: provider.name,
        label: request.label,
        callKey: origin?.callKey,
      }),
      mode: "one-shot",
      descriptor: start.descriptor,
      prompt: toBlocks(request.prompt),
      ...compact({ trace: request.trace }),
      ...(info.kind === "fork" ? seedOf(forkSeed(ctx)) : {}),
      ...compact({ outputSchema: start.outputSchema }),
    };
    const createdAt = Date.now();
    const { childId } = placed.value;
    const reservedRun = ctx.stores.transact(() => {
      // a foreground call whose turn ended while the start was on its way (an interrupt between
      // the calls of one step started side by side) starts nothing: nobody waits for its result
      if (origin && !origin.background && !turnOpen(ctx, origin.callKey)) return false;
      children.own(childId, provider.name, "one-shot", request.label, createdAt);
      runs.insert(
        {
          runId,
          childId,
          provider: provider.name,
          local: true,
          ...runs.originColumns(origin),
          spec,
          createdAt,
          deadlineAt: deadlineOf(request, createdAt),
        },
        key,
      );
      return true;
    });
    if (!reservedRun) return fail("OUT_OF_ORDER", "the turn that asked for this start has ended");
    return this.#publish(runId);
  }

  /** Inside a transaction: the child is told through the outbox (ordered after its creation). */
  requestCancel(run: RunRow, reason?: string): void {
    this.#enqueueCancel(run, reason);
  }

  /** Unpublished starts of an earlier instance first, then held starts whose window passed. */
  async repair(): Promise<boolean> {
    return (await this.#repairStarts()) || this.#abandonExpiredHolds();
  }

  nextDue(): number | undefined {
    return this.#repairOwed() ? Date.now() : this.#ctx.stores.runs.nextHeldExpiry();
  }

  /**
   * A start whose caller-reserved child id already has a run here: the same request is a retry
   * and gets that run (a held attempt is taken up again and its child created or re-attached, an
   * unpublished one is published now); any other request for the id is `DUPLICATE_CHILD`.
   */
  async #reattach(prior: RunRow, key: string): Promise<Outcome<string>> {
    const { runs, children } = this.#ctx.stores;
    if (prior.requestKey !== key)
      return fail("DUPLICATE_CHILD", `child ${prior.childId} was started with a different request`);
    if (prior.heldUntil !== null) {
      // the held attempt gave its place in the children budget back: taking it up needs one again
      const budget = childBudget(this.#ctx);
      if (!budget.ok) return budget;
      this.#ctx.stores.transact(() => {
        runs.unhold(prior.runId);
        if (!children.has(prior.childId))
          children.own(prior.childId, prior.provider, "one-shot", prior.spec.label, prior.createdAt);
      });
    }
    const run = runs.get(prior.runId)!;
    const publishing = this.#publishing.get(run.runId);
    if (publishing) return publishing; // the first attempt is still creating the child: its outcome is ours
    if (run.state === "starting") return this.#publish(run.runId);
    return ok(run.runId);
  }

  /** Creates the child (idempotently) and records `subagent/start`; settles at once if the result is in. */
  #publish(runId: string): Promise<Outcome<string>> {
    return this.#publishing.run(runId, () => this.#publishAttempt(runId));
  }

  async #publishAttempt(runId: string): Promise<Outcome<string>> {
    const ctx = this.#ctx;
    const { runs, children, outbox, log } = ctx.stores;
    const run = runs.get(runId)!;
    const announce = (): void => {
      log.append("subagent/start", { runId, provider: run.provider, id: run.childId, local: run.local });
    };
    if (run.cancelRequested) {
      // disposed before the child was created: it never will be
      ctx.stores.transact(() => {
        if (!runs.markRunning(runId)) return;
        announce();
        outbox.withdraw(`cancel:${runId}`);
        this.#owner.settle(runs.get(runId)!, abortedBeforeStart());
      });
      return ok(runId);
    }
    const created = await initChild(() => ctx.session(run.childId, run.spec.locationHint).init(run.spec));
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
      if (pending.result) this.#owner.settle(pending, pending.result);
      else if (pending.cancelRequested) outbox.retryNow(`cancel:${runId}`); // the child exists now
    });
    if (runs.get(runId)?.state === "running") ctx.childStarted();
    if (runs.get(runId)?.cancelRequested) ctx.kick();
    return ok(runId);
  }

  /** Finishes starts that an earlier instance reserved but did not publish (it was evicted). */
  async #repairStarts(): Promise<boolean> {
    if (!this.#repairOwed()) return false;
    let repaired = false;
    for (const run of this.#ctx.stores.runs.starting()) {
      if (this.#publishing.has(run.runId)) continue;
      repaired = (await this.#publish(run.runId)).ok || repaired;
    }
    return repaired;
  }

  /** Whether a reserved start waits for repair (the alarm must come back for it). */
  #repairOwed(): boolean {
    return this.#ctx.stores.runs.startingIds().some((runId) => !this.#publishing.has(runId));
  }

  /**
   * Abandons held starts whose retry window has passed: the child the lost init may have created
   * is cancelled, and the attempt is forgotten. Resolves true when it abandoned one.
   */
  #abandonExpiredHolds(): boolean {
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

  #enqueueCancel(run: RunRow, reason?: string): void {
    this.#ctx.stores.outbox.enqueue({
      v: 1,
      id: `cancel:${run.runId}`,
      from: run.spec.parentSession,
      to: run.childId,
      kind: "cancel-run",
      runId: run.runId,
      ...compact({ reason }),
    });
  }
}

function seedOf(seed: NonNullable<ChildInit["seed"]>): Pick<ChildInit, "seed"> {
  return seed.length === 0 ? {} : { seed };
}

/** Whether the turn of a model tool call's key is still the open one. */
function turnOpen(ctx: SessionContext, key: string): boolean {
  const call = turnCallOf(key);
  return call === undefined || ctx.stores.loop.get().openTurn === call.turn;
}
