import { compact } from "../../../src/core/compact";
import type { MessageDelivery } from "../../../src/contract/control";
import { toBlocks } from "../../../src/contract/content";
import type {
  ChildStart,
  ContinuableInit,
  ContinuableStart,
  FollowupInput,
  InterruptAuthority,
} from "../../../src/contract/continuable";
import { fail, type Outcome, ok } from "../../../src/contract/errors";
import type { MessageSource } from "../../../src/contract/events";
import { newRunId } from "../../../src/contract/ids";
import { logRefusal } from "../../../src/core/quotas";
import { requestKey } from "../../../src/core/request-key";
import { DESCRIPTOR_VERSION } from "../../../src/core/descriptor";
import { checkContinuableStart } from "../../../src/providers/start-checks";
import { initChild, StartsInFlight } from "../child-start";
import { childInit, forkSeed, type PlacedChild, placeChild, reservedChildId } from "../child-spec";
import type { EnvelopeHandlers, SessionPart } from "../../kernel/part";
import { ContinuableEpochs } from "./continuable-epochs";
import type { Drains } from "./drains";
import type { SessionContext } from "../../session/session-context";

export interface ContinuableStarted {
  childId: string;
  messageId: string;
}

/** A start whose child's row and first epoch are reserved: what creating the child needs. */
interface Reserved {
  init: ContinuableInit;
  provider: string;
  label: string;
  callKey: string | undefined;
  /** The request key of a caller-reserved id (a retry re-attaches by it). */
  key: string | undefined;
}

/**
 * Continuable children, parent side (semantics.md §6): start (answers at the child's inbox
 * acceptance), follow-up (direct parent only; cold-resumes a settled child as a new epoch),
 * interrupt, and applying what children send: reports and one settlement notice per epoch
 * (continuable-epochs.ts). Ownership is acquired before a child can run and released by its notice.
 */
export class ContinuableParent implements SessionPart {
  readonly name = "continuable children";
  readonly envelopes: EnvelopeHandlers = {
    report: (envelope) => {
      this.#epochs.applyReport(envelope);
      return false;
    },
    settled: (envelope) => {
      this.#epochs.applySettled(envelope);
      return false;
    },
  };
  readonly #ctx: SessionContext;
  /** Starts creating their child right now, by first epoch: a retry of one waits for its outcome. */
  readonly #starts = new StartsInFlight<Outcome<ContinuableStarted>>();
  /** Follow-ups this instance is sending right now, by the epoch a cold resume would start. */
  readonly #resumes = new StartsInFlight<Outcome<{ messageId: string; resumed: boolean }>>();
  /** This session's drains: starts and follow-ups are refused while one runs. */
  readonly #drains: Drains;
  /** Its children's epochs: published, settled, and what they send. */
  readonly #epochs: ContinuableEpochs;

  constructor(ctx: SessionContext, drains: Drains) {
    this.#ctx = ctx;
    this.#drains = drains;
    this.#epochs = new ContinuableEpochs(ctx, drains);
  }

  /**
   * Starts a continuable child (semantics.md §6.2): check (start-checks.ts, as a one-shot start
   * is) -> place (child-spec.ts) -> reserve its row and first epoch -> `init` under the one retry
   * policy -> publish `subagent/start`, or forget the reservation. `callKey` (a tool call's turn
   * and id) makes a start from the model idempotent; a caller-reserved `childId` makes the same
   * request a retry of the start it names (§10.5). Both are kept in store/continuable-starts.ts.
   * The child's first turn joins the start's `trace`.
   */
  async start(spec: ChildStart, callKey?: string): Promise<Outcome<ContinuableStarted>> {
    const ctx = this.#ctx;
    const { stores } = ctx;
    const header = ctx.header()!;
    const byCall = callKey === undefined ? undefined : stores.continuableStarts.byCall(callKey);
    if (byCall !== undefined) return ok({ childId: byCall.childId, messageId: byCall.messageId ?? "" });
    if (this.#drains.draining()) return fail("DRAINING", "this session is draining its children");
    const checked = checkContinuableStart(spec.provider, await ctx.provider(spec.provider), spec);
    if (!checked.ok) return checked;
    const { provider: record, info, maxDepth } = checked.value;
    const retry = this.#retryOf(spec, callKey);
    if (!retry.ok) return retry;
    const { key, prior } = retry.value;
    const placed = placeChild(
      ctx,
      header,
      { ...spec, maxDepth, turnDeadlineSeconds: spec.deadlineSeconds },
      !!prior,
    );
    if (!placed.ok) return placed;
    const runId = prior?.runId ?? newRunId();
    const init = this.#initOf(spec, record.name, runId, placed.value, info.kind === "fork", callKey);
    const start: Reserved = { init, provider: record.name, label: spec.label, callKey, key };
    // the first attempt is still creating the child: its outcome is this retry's too
    const creating = this.#starts.get(runId);
    if (creating) return creating;
    const priorState = prior === undefined ? undefined : stores.epochs.state(runId);
    if (priorState === "published" || priorState === "ended") {
      // that start went through (its answer was lost): the child's idempotent init gives its message id
      const again = await initChild(() => ctx.session(init.id, init.locationHint).initContinuable(init));
      if (again === undefined)
        return fail("OVERLOADED", "the child could not be reached right now; try again");
      return again.ok ? ok({ childId: init.id, messageId: again.value.messageId }) : again;
    }
    this.#reserve(start);
    return this.#starts.run(runId, () => this.#create(start));
  }

  /**
   * A caller-reserved id remembers the request it was started with and its first epoch's run id:
   * the same request again is a retry of that start; another request for the id is DUPLICATE_CHILD.
   */
  #retryOf(
    spec: ContinuableStart,
    callKey: string | undefined,
  ): Outcome<{ key: string | undefined; prior: { runId: string } | undefined }> {
    if (callKey !== undefined || spec.childId === undefined) return ok({ key: undefined, prior: undefined });
    const key = requestKey(spec);
    const reserved = reservedChildId(this.#ctx.header()!, spec);
    const recorded =
      reserved === undefined ? undefined : this.#ctx.stores.continuableStarts.requestOf(reserved);
    if (recorded === undefined) return ok({ key, prior: undefined });
    const { requestKey: priorKey, runId } = recorded;
    if (priorKey !== key || runId === undefined)
      return fail("DUPLICATE_CHILD", `child ${reserved} was started with a different request`);
    return ok({ key, prior: { runId } });
  }

  #initOf(
    spec: ChildStart,
    provider: string,
    runId: string,
    placed: PlacedChild,
    fork: boolean,
    callKey: string | undefined,
  ): ContinuableInit {
    const seed = fork ? forkSeed(this.#ctx) : [];
    return {
      ...childInit(this.#ctx.header()!, placed, { runId, provider, label: spec.label, callKey }),
      label: spec.label,
      mode: "continuable",
      descriptor: {
        version: DESCRIPTOR_VERSION,
        mode: "continuable",
        provider,
        label: spec.label,
        agentModel: placed.options.model,
        ...compact({ persona: spec.persona }),
        ...compact({ toolFilter: spec.toolFilter }),
      },
      prompt: toBlocks(spec.prompt),
      ...compact({ trace: spec.trace }),
      ...(seed.length === 0 ? {} : { seed }),
    };
  }

  /** The child's row and its first epoch, before the child exists (repair finds them after a crash). */
  #reserve({ init, provider, label, callKey, key }: Reserved): void {
    const { stores } = this.#ctx;
    const { continuableStarts } = stores;
    stores.transact(() => {
      if (!stores.children.has(init.id))
        stores.children.own(init.id, provider, "continuable", label, Date.now());
      stores.children.ownEpoch(init.id, init.runId);
      stores.epochs.reserve(init.runId, init.id);
      if (callKey !== undefined) continuableStarts.reserveCall(callKey, init.id);
      if (key !== undefined) continuableStarts.reserveRequest(init.id, key, init.runId);
    });
  }

  /** Creates the child, then publishes the epoch, or forgets the reservation (a retry may take it up). */
  async #create({ init, provider, callKey, key }: Reserved): Promise<Outcome<ContinuableStarted>> {
    const ctx = this.#ctx;
    const { stores } = ctx;
    const { continuableStarts } = stores;
    const { id: childId, runId } = init;
    const answer = await initChild(() => ctx.session(childId, init.locationHint).initContinuable(init));
    if (answer === undefined || !answer.ok) {
      // no answer: the init may have landed unseen, and a retry with the same id re-attaches to it
      const ambiguous = answer === undefined;
      const published = stores.epochs.state(runId) === "published";
      stores.transact(() => {
        if (!published) {
          stores.children.forget(childId);
          stores.epochs.forget(runId);
        }
        if (callKey !== undefined) continuableStarts.forgetCall(callKey);
        if (key !== undefined && !ambiguous && !published) continuableStarts.forgetRequest(childId);
      });
      return (
        answer ??
        fail(
          "OVERLOADED",
          key === undefined
            ? "the child could not be created right now"
            : "the child could not be created right now; retry the same request with the same childId",
        )
      );
    }
    const { messageId } = answer.value;
    stores.transact(() => {
      this.#epochs.publish(runId, childId, provider);
      if (callKey !== undefined) continuableStarts.publishCall(callKey, messageId);
    });
    return ok({ childId, messageId });
  }

  /** The only way to continue a child: direct parent only; cold-resumes a settled child. */
  async followup(
    childId: string,
    content: FollowupInput["content"],
    source: MessageSource,
    { idempotencyKey, delivery }: { idempotencyKey?: string; delivery?: MessageDelivery } = {},
  ): Promise<Outcome<{ messageId: string }>> {
    const ctx = this.#ctx;
    const { children } = ctx.stores;
    if (this.#drains.draining()) return fail("DRAINING", "this session is draining its children");
    // a log at its quota takes no new work: a follow-up writes to it (a cold resume's start)
    const full = logRefusal(ctx.stores.log.bytes(), ctx.limits.logCap);
    if (full) return full;
    const row = children.get(childId);
    if (row?.mode === "one-shot") {
      return fail(
        "NOT_RESUMABLE",
        `subagent ${childId} has no supported continuation state (a one-shot child)`,
      );
    }
    const resumeRunId = newRunId();
    // the epoch a cold resume would start is reserved first, so a crash mid-call leaves it repairable
    ctx.stores.transact(() => {
      if (row) children.ownEpoch(childId, null);
      ctx.stores.epochs.reserve(resumeRunId, childId);
    });
    // the epoch stays in flight until its outcome is committed: repair never sees it in between
    const answer = await this.#resumes.run(resumeRunId, async () => {
      let answer: Outcome<{ messageId: string; resumed: boolean }>;
      try {
        const from = ctx.header()!.id;
        answer = await ctx.session(childId).followup({
          from,
          content,
          source,
          resumeRunId,
          ...(idempotencyKey === undefined ? {} : { idempotencyKey: `${from}:${idempotencyKey}` }),
          ...compact({ delivery }),
        });
      } catch {
        answer = fail("NOT_RESUMABLE", `subagent ${childId} is unavailable right now`);
      }
      ctx.stores.transact(() => {
        if (answer.ok && answer.value.resumed) {
          children.ownEpoch(childId, resumeRunId);
          this.#epochs.publish(resumeRunId, childId, row?.provider ?? "spawn");
          return;
        }
        ctx.stores.epochs.forget(resumeRunId);
        if (row?.state === "released" && children.get(childId)?.epochRunId === row.epochRunId) {
          children.setState(childId, "released"); // nothing new runs: ownership goes back as it was
        }
      });
      return answer;
    });
    return answer.ok ? ok({ messageId: answer.value.messageId }) : answer;
  }

  /** Interrupt a session below this one (direct child: user authority; deeper: ancestor authority). */
  async interrupt(targetId: string, authority: InterruptAuthority): Promise<Outcome<{ accepted: true }>> {
    try {
      return await this.#ctx.session(targetId).interruptBy(authority);
    } catch {
      return ok({ accepted: true }); // an unreachable target has nothing to interrupt
    }
  }

  /**
   * Finishes epochs an earlier instance reserved but never published (it died mid-start): the
   * child says whether that epoch exists; if so it is published (and a held notice applied),
   * else the reservation is dropped.
   */
  async repair(): Promise<boolean> {
    const ctx = this.#ctx;
    const { epochs, children } = ctx.stores;
    let repaired = false;
    for (const { runId, childId } of epochs.starting()) {
      if (this.#inFlight(runId)) continue;
      let known: boolean;
      try {
        known = await ctx.session(childId).knowsEpoch(runId);
      } catch {
        continue; // unreachable now: the alarm comes back
      }
      if (this.#inFlight(runId)) continue; // a retry took this epoch up meanwhile: it publishes it
      ctx.stores.transact(() => {
        if (known) {
          // the child runs this epoch: it is the child's current one (the call that started it died)
          children.ownEpoch(childId, runId);
          this.#epochs.publish(runId, childId, children.get(childId)?.provider ?? "spawn");
        } else epochs.forget(runId);
      });
      repaired = true;
    }
    return repaired;
  }

  /** Now when a start waits for repair; the cut-short drain is the child side's (continuable-child.ts). */
  nextDue(): number | undefined {
    return this.#ctx.stores.epochs.starting().some((e) => !this.#inFlight(e.runId)) ? Date.now() : undefined;
  }

  /** Whether this instance is starting or resuming the epoch `runId` right now (repair must not race it). */
  #inFlight(runId: string): boolean {
    return this.#starts.has(runId) || this.#resumes.has(runId);
  }
}
