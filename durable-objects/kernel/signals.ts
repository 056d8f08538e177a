import type { TurnEnds } from "../../src/agent/turns";
import type { Envelope } from "../../src/contract/envelope";
import type { TurnEndReason } from "../../src/contract/events";
import type { SessionHeader } from "../../src/contract/session";
import { inOrder } from "./in-order";
import type { EnvelopeHandler, SessionPart } from "./part";

/**
 * The three things that happen inside a session object that its parts react to: a turn ended
 * (inside the transaction that appends `turn/end`), an envelope arrived (inside the delivery
 * transaction) and work is due (the drive loop runs). Built before everything else of the object;
 * each part is added as it is built (`add`), with the envelope kinds and the turn-end hook it
 * declares; the turn-end hooks are then put in their declared order (`orderTurnEnds`), and the
 * drive loop, built last, listens for work due (`whenWorkDue`).
 */
export class SessionSignals implements TurnEnds {
  readonly #handlers = new Map<Envelope["kind"], { part: string; handler: EnvelopeHandler }>();
  #turnEnds: SessionPart[] = [];
  #workDue: (() => void) | undefined;

  /**
   * Registers a part's envelope kinds (each kind has exactly one handler: a second is a wiring
   * bug, thrown at once) and its turn-end hook, in the order parts are added. Returns the part.
   */
  add<P extends SessionPart>(part: P): P {
    for (const [kind, handler] of Object.entries(part.envelopes ?? {}) as [
      Envelope["kind"],
      EnvelopeHandler,
    ][]) {
      const taken = this.#handlers.get(kind);
      if (taken) throw new Error(`envelope kind ${kind} is handled by both ${taken.part} and ${part.name}`);
      this.#handlers.set(kind, { part: part.name, handler });
    }
    if (part.onTurnEnd) this.#turnEnds.push(part);
    return part;
  }

  /** Puts the turn-end hooks in the declared `order` of their parts' names (in-order.ts). */
  orderTurnEnds(order: readonly string[]): void {
    this.#turnEnds = inOrder(this.#turnEnds, order);
  }

  /** Throws unless every kind in `kinds` has a handler (checked once every part is added). */
  requireHandlers(kinds: readonly Envelope["kind"][]): void {
    for (const kind of kinds)
      if (!this.#handlers.has(kind)) throw new Error(`no part handles envelope kind ${kind}`);
  }

  /**
   * Inside the delivery transaction: applies an envelope with the handler of its kind. True when
   * it ended an open turn (delivery then aborts the in-flight model call, after the commit).
   */
  apply(envelope: Envelope, header: SessionHeader | undefined): boolean {
    const found = this.#handlers.get(envelope.kind);
    if (!found) throw new Error(`no part handles envelope kind ${envelope.kind}`);
    return found.handler(envelope, header);
  }

  turnEnded(turn: number, reason: TurnEndReason, turnStartSeq: number): void {
    for (const part of this.#turnEnds) part.onTurnEnd?.(turn, reason, turnStartSeq);
  }

  /** The one listener of `workDue`: the drive loop, which runs every part's work. */
  whenWorkDue(listener: () => void): void {
    if (this.#workDue) throw new Error("one drive loop runs a session's work");
    this.#workDue = listener;
  }

  /** Work is owed: the drive loop runs (without waiting). Before the loop exists nothing runs. */
  workDue(): void {
    this.#workDue?.();
  }
}
