import { type CallbackEnvelope, ENVELOPE_VERSIONS, type Envelope } from "../../src/contract/envelope";
import { fail, type Outcome, ok } from "../../src/contract/errors";
import { faultPoint } from "../../src/core/faults";
import { isOverloaded } from "../../src/core/overloaded";
import type { SessionPart, StopCause } from "../kernel/part";
import type { SessionSignals } from "../kernel/signals";
import type { SessionContext } from "../session/session-context";

/**
 * Messages between session objects. Sending: the driver drains the outbox in order, one link
 * (target) at a time, backing off on failure. Receiving: each envelope is applied once, in its
 * link's order, in one transaction with its effects and its receipt (store/receipts.ts).
 */

/** Sends an envelope that leaves the deployment (a callback); throws when the attempt failed. */
export interface ExternalSender {
  send(envelope: CallbackEnvelope): Promise<void>;
}

export class Delivery implements SessionPart {
  readonly name = "delivery";
  readonly #ctx: SessionContext;
  readonly #signals: SessionSignals;
  readonly #external: ExternalSender;

  /**
   * `signals` applies each envelope with the handler of its kind; `external` sends the envelopes
   * that leave the deployment (callbacks) over HTTP.
   */
  constructor(ctx: SessionContext, signals: SessionSignals, external: ExternalSender) {
    this.#ctx = ctx;
    this.#signals = signals;
    this.#external = external;
  }

  /** Every pass: the outbox is drained between steps too (a cancel must not wait for the turn). */
  step(): Promise<boolean> {
    return this.drainOutbox();
  }

  /**
   * The session is deleted: nothing goes to its children (they are deleted too); a parent deleted
   * too gets nothing, a parent that lives on only how the approvals it was told of ended (it
   * forgets the child's runs itself, `childDeleted`).
   */
  onStop(cause: StopCause): undefined {
    const { stores } = this.#ctx;
    for (const child of stores.children.all()) stores.outbox.withdrawAllTo(child.childId);
    const parent = this.#ctx.header()?.parentSession ?? null;
    if (parent !== null) stores.outbox.withdrawAllTo(parent, cause === "parent" ? [] : ["approval"]);
    return undefined;
  }

  /** While the session is deleted: what its outbox still owes goes out (a grace the deletion bounds). */
  owesBeforeErase(): boolean {
    return this.#ctx.stores.outbox.nextDue() !== undefined;
  }

  nextDue(): number | undefined {
    return this.#ctx.stores.outbox.nextDue();
  }

  async deliver(envelope: Envelope): Promise<Outcome<{ applied: boolean }>> {
    if (!ENVELOPE_VERSIONS.includes(envelope.v)) {
      return fail("INVALID_REQUEST", `envelope version ${envelope.v} is not understood`);
    }
    if (envelope.kind === "callback")
      return fail("INVALID_REQUEST", "callbacks are not delivered to objects");
    await faultPoint(envelope.to, "before-apply");
    const ctx = this.#ctx;
    const header = ctx.header();
    // Only a cancel may reach a session that does not exist yet (it outran the child's creation).
    if ((!header && envelope.kind !== "cancel-run") || (header && envelope.to !== header.id)) {
      return fail("NOT_FOUND", "no such session");
    }
    const outcome = ctx.stores.transact(() => {
      const order = ctx.stores.receipts.linkOrder(envelope);
      if (order !== "next" || !ctx.stores.receipts.firstSeen(envelope.id))
        return { order, applied: false, interrupted: false };
      return { order, applied: true, interrupted: this.#signals.apply(envelope, header) };
    });
    if (outcome.order === "early")
      return fail("OUT_OF_ORDER", "an earlier envelope on this link has not arrived yet");
    if (outcome.interrupted) ctx.turns.abortInFlight("parent");
    if (outcome.applied) ctx.kick();
    return ok({ applied: outcome.applied });
  }

  /** Delivers due outbox rows. Resolves true when something was delivered (more may be owed). */
  async drainOutbox(): Promise<boolean> {
    const ctx = this.#ctx;
    const { outbox } = ctx.stores;
    const scope = ctx.header()?.id ?? "";
    let delivered = false;
    const blocked = new Set<string>();
    for (const row of outbox.due(Date.now())) {
      if (blocked.has(row.target)) continue;
      // a send is counted before it goes out (its first one was, with the row): a restart during
      // it is then a failed attempt, so a send that crashes the object every time dead-letters
      if (!outbox.sendClaimed(row) && !ctx.stores.transact(() => outbox.claimSend(row))) {
        blocked.add(row.target);
        continue;
      }
      try {
        await faultPoint(scope, "before-send");
        if (row.envelope.kind === "callback") await this.#external.send(row.envelope);
        else {
          const after = outbox.gapBelow(row);
          const envelope = after === undefined ? row.envelope : { ...row.envelope, after };
          const answer = await ctx.session(row.target).deliver(envelope);
          await faultPoint(scope, "after-send");
          if (!answer.ok && answer.code === "NOT_FOUND")
            throw new Error(`target ${row.target} does not exist`);
          if (!answer.ok) throw new Error(`${answer.code}: ${answer.message}`);
        }
        ctx.stores.transact(() => outbox.markDelivered(row.id));
        delivered = true;
      } catch (error) {
        blocked.add(row.target); // per-link order: the rest of this link waits
        const message = error instanceof Error ? error.message : String(error);
        ctx.stores.transact(() => outbox.markFailed(row, message.slice(0, 500), isOverloaded(error)));
      }
    }
    return delivered;
  }
}
