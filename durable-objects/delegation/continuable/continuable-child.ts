import { compact } from "../../../src/core/compact";
import { isDeadline, MAX_PENDING_STEERS } from "../../../src/contract/control";
import {
  INTERRUPT_DELIVERY_CAUSE,
  placement,
  replaceRunningTurn,
  steersFull as steersFullRefusal,
} from "../../conversation/admission";
import { toBlocks } from "../../../src/contract/content";
import type {
  ChildReport,
  ContinuableInit,
  FollowupInput,
  InterruptAuthority,
} from "../../../src/contract/continuable";
import type { ReportDelivery, ReportEnvelope } from "../../../src/contract/envelope";
import { faultPoint } from "../../../src/core/faults";
import { fail, type Outcome, ok } from "../../../src/contract/errors";
import { messageIdFromDigest, newMessageId } from "../../../src/contract/ids";
import { sha256Hex } from "../../../src/core/hash";
import { messageQuota } from "../../../src/core/quotas";
import type { SessionHeader } from "../../../src/contract/session";
import { type Descriptor, foldDescriptor } from "../../../src/core/descriptor";
import {
  epochOutcome,
  noticeSummary,
  noticeText,
  reportText,
  residencyOf,
} from "../../../src/core/settlement";
import { sumUsage } from "../../../src/core/usage";
import { childHeader, writeSeed } from "../child-spec";
import type { ActivationRow } from "../../store/activation";
import type { RunRow } from "../../store/runs";
import type { SessionPart } from "../../kernel/part";
import type { Drains } from "./drains";
import type { SessionContext } from "../../session/session-context";

/** What it needs of this session's own one-shot runs: cancelling them when it is drained. */
export interface OwnRuns {
  requestCancel(run: RunRow): void;
}

/** Backoff of finishing a cut-short drain whose children cannot be reached: 1 s doubling to 60 s. */
const DRAIN_RETRY_MS = 1_000;
const DRAIN_RETRY_MAX_MS = 60_000;

/**
 * Continuable children, child side (semantics.md §6): the activation row is the current epoch;
 * running / waiting / settled are derived from durable state. A settled epoch writes exactly one
 * notice to the outbox and ends; a follow-up to a settled child starts a new epoch (cold resume).
 */

const NOT_RESUMABLE = "has no supported continuation state; do not retry send_message with it";

export class ContinuableChild implements SessionPart {
  readonly name = "continuable child";
  /** When finishing a cut-short drain may be tried again (memory only: a new instance tries at once). */
  #drainRetry = { at: 0, failures: 0 };
  readonly #ctx: SessionContext;
  readonly #drains: Drains;
  readonly #runs: OwnRuns;

  /** `drains` and `runs`: this session's own drains and one-shot runs, which a drain ends too. */
  constructor(ctx: SessionContext, drains: Drains, runs: OwnRuns) {
    this.#ctx = ctx;
    this.#drains = drains;
    this.#runs = runs;
  }

  #activation(): ActivationRow | undefined {
    return this.#ctx.stores.activation.get();
  }

  async init(spec: ContinuableInit): Promise<Outcome<{ id: string; messageId: string }>> {
    await faultPoint(spec.id, "in-init");
    const { stores } = this.#ctx;
    const existing = stores.header.get();
    if (existing) {
      const first = stores.log.ofTypes(["agent/inbox/inserted"], 0)[0];
      const same =
        existing.parentSession === spec.parentSession &&
        existing.mode === "continuable" &&
        stores.flags.get("first_run_id") === spec.runId;
      return same && first
        ? ok({ id: existing.id, messageId: first.data.messageId })
        : fail("DUPLICATE_CHILD", `session ${spec.id} already exists`);
    }
    const messageId = newMessageId();
    stores.transact(() => {
      stores.header.set({ ...childHeader(spec, spec.seed?.length ?? 0), mode: "continuable" });
      writeSeed(this.#ctx, spec.seed);
      stores.log.append("subagent/descriptor", spec.descriptor);
      stores.flags.set("first_run_id", spec.runId);
      this.#activate(1, spec.runId, spec.provider);
      stores.inbox.admit({
        messageId,
        lane: "next-turn",
        waking: true,
        source: { kind: "user", ...compact({ trace: spec.trace }) },
        content: spec.prompt,
        contentHash: messageId,
      });
    });
    this.#ctx.kick();
    return ok({ id: spec.id, messageId });
  }

  /** Whether this child ever ran the epoch `runId` (its parent repairs an unpublished start with it). */
  knowsEpoch(runId: string): boolean {
    const { stores } = this.#ctx;
    return (
      stores.flags.get("first_run_id") === runId ||
      this.#activation()?.runId === runId ||
      stores.outbox.has(`settled:${runId}`)
    );
  }

  receiveFollowup(input: FollowupInput): Outcome<{ messageId: string; resumed: boolean }> {
    const { stores } = this.#ctx;
    const header = stores.header.get();
    if (!header)
      return fail("NOT_RESUMABLE", "subagent is unavailable (unknown id); do not retry send_message with it");
    if (header.parentSession !== input.from)
      return fail("UNAUTHORIZED", `subagent ${header.id} belongs to another parent session`);
    const descriptor = header.mode === "continuable" ? this.#ownDescriptor(header) : undefined;
    if (descriptor?.mode !== "continuable")
      return fail("NOT_RESUMABLE", `subagent ${header.id} ${NOT_RESUMABLE}`);
    if (this.#drains.draining()) return fail("DRAINING", `subagent ${header.id} is draining`);
    let messageId: string = newMessageId();
    let resumed = false;
    let steersFull = false;
    let interrupted = false;
    const delivery = input.delivery ?? "next-turn";
    // MAX_PENDING_MESSAGES and MAX_LOG_BYTES, as for any message: refused, nothing stored
    const quota = messageQuota(stores.log.bytes(), this.#ctx.limits);
    const full = stores.transact(() => {
      const prior =
        input.idempotencyKey === undefined ? undefined : stores.inbox.byIdempotencyKey(input.idempotencyKey);
      if (prior !== undefined) {
        messageId = prior; // already taken: the same message, no new epoch
        return false;
      }
      if (stores.inbox.pendingCount() >= quota.capacity) {
        // a full inbox parked by an interrupt resumes (its turns free places), a full log does not
        const loop = stores.loop.get();
        if (quota.capacity > 0 && loop.parked) stores.loop.set({ ...loop, parked: false });
        return true;
      }
      if (delivery === "next-step" && stores.inbox.pendingSteers() >= MAX_PENDING_STEERS) {
        steersFull = true; // refused before anything is stored
        return false;
      }
      if (!this.#activation()) {
        // cold resume: a new epoch from the descriptor (the provider is never asked again)
        this.#activate(Number(stores.flags.get("epochs") ?? "1") + 1, input.resumeRunId, descriptor.provider);
        resumed = true;
      }
      stores.inbox.admit({
        messageId,
        ...placement(delivery),
        waking: true,
        source: input.source,
        content: toBlocks(input.content),
        contentHash: messageId,
        ...compact({ idempotencyKey: input.idempotencyKey }),
      });
      interrupted = replaceRunningTurn(delivery, this.#ctx);
      stores.loop.set({ ...stores.loop.get(), parked: false });
      return false;
    });
    if (interrupted) this.#ctx.turns.abortInFlight(INTERRUPT_DELIVERY_CAUSE);
    if (full) {
      if (quota.capacity > 0) this.#ctx.kick();
      return quota.refusal;
    }
    if (steersFull) return steersFullRefusal();
    this.#ctx.kick();
    return ok({ messageId, resumed });
  }

  /** Resume authority reads only the child's own suffix: a fork seed's descriptor never governs. */
  #ownDescriptor(header: SessionHeader): Descriptor | undefined {
    try {
      return foldDescriptor(
        this.#ctx.stores.log.ofTypes(["subagent/descriptor"], header.seedLength ?? 0).map((e) => e.data),
      );
    } catch {
      return undefined;
    }
  }

  interruptBy(authority: InterruptAuthority): Outcome<{ accepted: true }> {
    const header = this.#ctx.header();
    if (!header) return ok({ accepted: true });
    if (authority.kind === "user" && header.parentSession !== authority.parentSessionId) {
      return fail("UNAUTHORIZED", `${header.id} is not a child of ${authority.parentSessionId}`);
    }
    if (authority.kind === "ancestor") {
      if (authority.ancestorId === header.id) return fail("UNAUTHORIZED", "an agent cannot interrupt itself");
      if (!header.lineage.includes(authority.ancestorId)) {
        return fail("UNAUTHORIZED", `${header.id} is not a live descendant of the caller`);
      }
    }
    if (header.mode !== "continuable" || !this.#activation()) return ok({ accepted: true });
    // both authorities reach the child through its lineage: its log names its parent as the cause
    // (`user` is kept for an interrupt on the session's own route, by whoever holds its token)
    this.#ctx.turns.interrupt("parent");
    return ok({ accepted: true });
  }

  /** Drained by the parent: children first, then this epoch ends without waking the parent. */
  async drainFrom(parentId: string): Promise<Outcome<{ drained: string[] }>> {
    const ctx = this.#ctx;
    const { stores } = ctx;
    const header = ctx.header();
    if (!header) return ok({ drained: [] });
    if (header.parentSession !== parentId)
      return fail("UNAUTHORIZED", `${header.id} is not a child of ${parentId}`);
    // the flag records who asked, so a drain cut short by a reset is finished later (`step`)
    stores.transact(() => this.#drains.closeAdmission(`parent:${parentId}`));
    let aborted = false;
    const below = await this.#drains.whileDraining(async () => {
      const answer = await this.#drains.drain();
      stores.transact(() => {
        for (const run of stores.runs.unsettled()) this.#runs.requestCancel(run);
        // a start held for its caller's retry ends with the drain: no retry may start it later
        for (const run of stores.runs.heldExpired(Number.POSITIVE_INFINITY)) {
          stores.runs.delete(run.runId);
          this.#runs.requestCancel(run);
        }
        stores.inbox.discardPending("drained by parent");
        aborted = ctx.turns.closeForInterrupt("parent");
        stores.inbox.discardPending("drained by parent");
        this.#settle(true);
        this.#drains.reopenAdmission();
      });
      return answer;
    });
    if (aborted) ctx.turns.abortInFlight("parent");
    ctx.kick();
    return ok({ drained: below.ok ? below.value.drained : [] });
  }

  /**
   * In the drive loop, before any model step: finishes a drain that an earlier instance was reset
   * in the middle of (the durable flag says whose drain it was). Resolves true when it finished one.
   * A child that cannot be reached now never stalls the loop: the drain is tried again later, with
   * backoff, while the session's steps and outbox go on.
   */
  async step(): Promise<boolean> {
    const scope = this.#drains.drainCutShort();
    if (scope === undefined || Date.now() < this.#drainRetry.at) return false;
    try {
      if (scope.startsWith("parent:")) await this.drainFrom(scope.slice("parent:".length));
      else await this.#drains.drain();
    } catch (error) {
      const wait = Math.min(DRAIN_RETRY_MAX_MS, DRAIN_RETRY_MS * 2 ** this.#drainRetry.failures++);
      this.#drainRetry.at = Date.now() + wait;
      console.error(
        "finishing a cut-short drain failed; retrying",
        error instanceof Error ? error.message : error,
      );
      return false;
    }
    this.#drainRetry = { at: 0, failures: 0 };
    if (this.#drains.drainCutShort() !== undefined)
      this.#ctx.stores.transact(() => this.#drains.reopenAdmission());
    return true;
  }

  /**
   * Now while a drain cut short by a reset waits to be finished, or while a settled epoch waits
   * for its end (`repair`): an instance that died between the turn's end and the settlement, or
   * whose alarm was lost, still owes the parent its notice.
   */
  nextDue(): number | undefined {
    if (this.#drains.drainCutShort() !== undefined) return Math.max(Date.now(), this.#drainRetry.at);
    if (this.#ctx.header()?.mode === "continuable" && this.#activation() && this.residency() === "settled")
      return Date.now();
    return undefined;
  }

  /** In the drive loop when no step is owed: a settled epoch ends here (notice in the outbox). */
  repair(): boolean {
    if (this.#ctx.header()?.mode !== "continuable" || !this.#activation()) return false;
    return this.#ctx.stores.transact(() => this.#settle(false));
  }

  residency(): ReturnType<typeof residencyOf> {
    const { stores } = this.#ctx;
    return residencyOf({
      openTurn: stores.loop.get().openTurn !== null,
      pendingWaking: stores.inbox.pending().some((p) => p.waking),
      ownedChildren: stores.children.ownedContinuable().length + stores.runs.unsettledCount(),
    });
  }

  /**
   * The child's `report` tool: exactly one edge up, to the durable parent. Its envelope and
   * message ids come from the tool call (`callKey`), so a call run again after a restart sends
   * the same report, which the parent applies once; a parent turn it starts joins its `trace`.
   */
  async report(
    { text, trace }: ChildReport,
    delivery: ReportDelivery,
    callKey: string,
  ): Promise<Outcome<{ messageId: string }>> {
    const header = this.#ctx.header();
    if (header?.mode !== "continuable" || !this.#activation()) {
      return fail("UNAUTHORIZED", "only a continuable child can report to its parent");
    }
    if (this.#drains.draining()) return fail("DRAINING", "this subagent is draining");
    const messageId = messageIdFromDigest(await sha256Hex(`report/${header.id}/${callKey}`));
    const envelope: ReportEnvelope = {
      v: 1,
      id: `report:${messageId}`,
      from: header.id,
      to: header.parentSession!,
      kind: "report",
      messageId,
      text: reportText(header.id, text),
      delivery,
      ...compact({ trace }),
      ...(header.belowMcpFace ? { belowMcpFace: true as const } : {}),
    };
    try {
      const answer = await this.#ctx.session(header.parentSession!).deliver(envelope);
      if (!answer.ok)
        return fail("PARENT_UNAVAILABLE", `the parent could not take the report: ${answer.message}`);
    } catch {
      return fail("PARENT_UNAVAILABLE", "the parent could not be reached");
    }
    return ok({ messageId });
  }

  #activate(epoch: number, runId: string, provider: string): void {
    const { stores } = this.#ctx;
    stores.activation.begin({ epoch, runId, provider, startedSeq: stores.log.nextSeq() });
  }

  /** Ends the epoch: outcome from its own log suffix, one notice to the parent, activation gone. */
  #settle(drained: boolean): boolean {
    const { stores } = this.#ctx;
    const activation = this.#activation();
    const header = this.#ctx.header()!;
    if (!activation || (!drained && this.residency() !== "settled")) return false;
    const from = activation.startedSeq;
    const assistant = stores.log.ofTypes(["assistant/message"], from);
    const outcome = epochOutcome({
      turnEnds: stores.log.ofTypes(["turn/end"], from).map((e) => e.data.reason),
      assistant: assistant.map((e) => e.data.content),
      droppedWork: stores.log.ofTypes(["agent/inbox/discarded"], from).length > 0,
    });
    // a turn its deadline ended says so in the notice
    const lastCause = stores.log.last("turn/end", from)?.data.cause;
    const why = outcome.stopReason === "aborted" && isDeadline(lastCause) ? lastCause : undefined;
    // the epoch's own steps, as a one-shot run's result sums its run's (turn-result.ts)
    const usage = sumUsage(assistant.map((e) => e.data.usage));
    stores.outbox.enqueue({
      v: 1,
      id: `settled:${activation.runId}`,
      from: header.id,
      to: header.parentSession!,
      kind: "settled",
      runId: activation.runId,
      stopReason: outcome.stopReason,
      output: outcome.output,
      text: noticeText(header.id, outcome.stopReason, outcome.output, why),
      summary: noticeSummary(header.id, outcome.stopReason, why),
      drained,
      ...compact({ usage, subtreeUsage: stores.usage.unreported() }),
      ...(header.belowMcpFace ? { belowMcpFace: true as const } : {}),
    });
    stores.usage.markReported();
    stores.activation.end();
    stores.flags.set("epochs", String(activation.epoch));
    return true;
  }
}
