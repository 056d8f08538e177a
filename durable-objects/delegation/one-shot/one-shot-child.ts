import { compact } from "../../../src/core/compact";
import type { ChildInit } from "../../../src/contract/child-init";
import type { CancelRunEnvelope } from "../../../src/contract/envelope";
import { fail, type Outcome, ok } from "../../../src/contract/errors";
import type { SubagentResult } from "../../../src/contract/run";
import type { SessionHeader } from "../../../src/contract/session";
import { faultPoint } from "../../../src/core/faults";
import { abortedBeforeStart } from "../../../src/core/run-result";
import { turnResult } from "../../store/turn-result";
import { childHeader, writeSeed } from "../child-spec";
import type { EnvelopeHandlers, SessionPart } from "../../kernel/part";
import type { SessionContext } from "../../session/session-context";
import type { SessionSchedules } from "../../schedules/schedules";

/**
 * One-shot runs, child side: `init` writes header, seed, descriptor and prompt in one
 * transaction; the turn's end writes the one result to the outbox in the same transaction; a
 * cancel ends the turn as `aborted` (or, before the turn, reports `aborted` without running it).
 * The transaction that writes the result also ends the child's schedules: none outlives its run.
 */
export class OneShotChild implements SessionPart {
  readonly name = "one-shot child";
  readonly envelopes: EnvelopeHandlers = {
    "cancel-run": (envelope, header) => this.#cancel(envelope, header),
  };
  readonly #ctx: SessionContext;
  readonly #schedules: SessionSchedules;

  constructor(ctx: SessionContext, schedules: SessionSchedules) {
    this.#ctx = ctx;
    this.#schedules = schedules;
  }

  /** Creates this session as a one-shot child. Idempotent for the same parent and run. */
  async init(spec: ChildInit): Promise<Outcome<{ id: string }>> {
    await faultPoint(spec.id, "in-init");
    const { stores } = this.#ctx;
    const existing = stores.header.get();
    if (existing) {
      return existing.parentSession === spec.parentSession && existing.oneShot?.runId === spec.runId
        ? ok({ id: existing.id })
        : fail("DUPLICATE_CHILD", `session ${spec.id} already exists`);
    }
    stores.transact(() => {
      const header: SessionHeader = {
        ...childHeader(spec, spec.seed?.length ?? 0),
        mode: "one-shot",
        oneShot: {
          runId: spec.runId,
          provider: spec.provider,
          ...compact({ outputSchema: spec.outputSchema }),
        },
      };
      stores.header.set(header);
      writeSeed(this.#ctx, spec.seed);
      stores.log.append("subagent/descriptor", spec.descriptor);
      if (stores.cancelledRuns.parentOf(spec.runId) === spec.parentSession) {
        this.#report(header, abortedBeforeStart()); // cancelled before it existed: the prompt never runs
        return;
      }
      stores.inbox.admit({
        messageId: `msg_${spec.runId}`,
        lane: "next-turn",
        waking: true,
        source: { kind: "user", ...compact({ trace: spec.trace }) },
        content: spec.prompt,
        contentHash: spec.runId,
      });
    });
    this.#ctx.kick();
    return ok({ id: spec.id });
  }

  /** Inside the transaction that ends this child's turn: its result goes to the outbox. */
  onTurnEnd(): void {
    const header = this.#ctx.header();
    if (!header?.oneShot) return;
    const { stores } = this.#ctx;
    const schemaRequested = header.oneShot.outputSchema !== undefined;
    const result = turnResult(stores.log, header.seedLength ?? 0, schemaRequested);
    // its one report: everything its subtree used by now (its parent adds it to its tree's total)
    const subtreeUsage = stores.usage.subtree();
    this.#report(header, subtreeUsage ? { ...result, subtreeUsage } : result);
  }

  /**
   * Inside the delivery transaction: the parent cancels the run. Resolves true when an open turn
   * was ended (the caller then aborts the in-flight model call).
   */
  #cancel(envelope: CancelRunEnvelope, header: SessionHeader | undefined): boolean {
    const { stores } = this.#ctx;
    if (!header) {
      stores.cancelledRuns.add(envelope.runId, envelope.from); // the cancel outran `init`
      return false;
    }
    if (header.parentSession !== envelope.from || header.oneShot?.runId !== envelope.runId) return false;
    if (stores.outbox.has(`result:${envelope.runId}`)) return false;
    if (stores.loop.get().openTurn !== null)
      return this.#ctx.turns.closeForInterrupt(envelope.reason ?? "parent");
    stores.inbox.discardPending("cancelled by parent");
    this.#report(header, abortedBeforeStart());
    return false;
  }

  /**
   * Writes the one result of this run to the outbox (a second call changes nothing), and ends the
   * child's schedules (those a later turn made, too: every turn's end comes here).
   */
  #report(header: SessionHeader, result: SubagentResult): void {
    this.#schedules.endWithRun();
    const runId = header.oneShot!.runId;
    this.#ctx.stores.outbox.enqueue({
      v: 1,
      id: `result:${runId}`,
      from: header.id,
      to: header.parentSession!,
      kind: "run-result",
      runId,
      result,
      ...(header.belowMcpFace ? { belowMcpFace: true as const } : {}),
    });
  }
}
