import type { Envelope } from "../../src/contract/envelope";
import type { TurnEndReason } from "../../src/contract/events";
import type { SessionHeader } from "../../src/contract/session";

/**
 * Applies one kind of envelope inside the delivery transaction. Resolves true when it ended an
 * open turn (delivery then aborts the in-flight model call, after the commit).
 */
export type EnvelopeHandler<E extends Envelope = Envelope> = (
  envelope: E,
  header: SessionHeader | undefined,
) => boolean;

export type EnvelopeHandlers = {
  [K in Envelope["kind"]]?: EnvelopeHandler<Extract<Envelope, { kind: K }>>;
};

/**
 * One concept of a session object (one-shot runs, the one-shot child, the continuable parent and
 * child, delivery, a transport, the callback sender). The kernel loops over the parts it was
 * given and never names them (the import checker keeps durable-objects/kernel/ from importing any
 * feature); the composition hands a part the others it calls. Every hook is optional. One pass
 * of the drive loop (drive-loop.ts), over the parts in their declared order:
 *
 * 1. `pump()` of every part: starts background work beside the steps (transport calls), no await;
 * 2. `step()` of every part, in order: the work of every pass (a model step, the outbox); a new
 *    pass follows when any of them did something;
 * 3. `repair()` of the parts in order, until one did something (then a new pass): owed work that
 *    waits for quiet steps (unpublished starts, settlement);
 * 4. `idle()` likewise: waits for this instance's background work before the object may sleep;
 *
 * then the alarm is armed for the earliest `nextDue()`. The envelope kinds a part applies and its
 * turn-end hook are registered when it is added to the session's signals (signals.ts); each kind
 * has exactly one handler, and the turn-end hooks run in their declared order.
 */
/** Why a session stops for good: a caller's DELETE, its parent's deletion, or retention. */
export type StopCause = "caller" | "parent" | "retention";

/**
 * What a part does when its session is deleted (the deletion, deletion/deletion.ts, asks every
 * part that has it and names none).
 */
export interface Stoppable {
  readonly name: string;
  /**
   * Inside the transaction that marks the session deleted: ends this part's work (nothing of it
   * runs again). Returns what must run once that transaction committed, if anything.
   */
  onStop?(cause: StopCause, reason: string): (() => void) | undefined;
  /** While the session is being deleted: whether this part still has something to send before the object may be erased. */
  owesBeforeErase?(): boolean;
}

export interface SessionPart extends Stoppable {
  /** For messages and diagnostics: the concept this part holds. */
  readonly name: string;
  pump?(): void;
  /** Resolves true when it did work (more may be owed). */
  step?(): Promise<boolean>;
  /** Resolves true when it did work (more may be owed). */
  repair?(): Promise<boolean> | boolean;
  /** Resolves true when it waited for something that finished (more may be owed). */
  idle?(): Promise<boolean>;
  /** When this part needs the object awake: `Date.now()` for owed work, a later time, or undefined. */
  nextDue?(): number | undefined;
  readonly envelopes?: EnvelopeHandlers;
  /** Inside the transaction that appends `turn/end`. */
  onTurnEnd?(turn: number, reason: TurnEndReason, turnStartSeq: number): void;
}
