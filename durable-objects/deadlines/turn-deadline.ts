import { deadlineDiagnostic } from "../../src/contract/control";
import { DueTimer } from "../kernel/due-timer";
import type { SessionPart } from "../kernel/part";
import type { SessionContext } from "../session/session-context";

/**
 * A continuable child's `deadlineSeconds` (README "Deadlines"): each of its turns ends `aborted`
 * once it has run that long, its `turn/end` cause saying so (and so its settlement notice). The
 * time counts from the turn's `turn/start`; a timer ends the turn at its time even in the middle
 * of a model call, and the alarm keeps the time across evictions and restarts. Work queued behind
 * the turn still runs.
 */
export class TurnDeadline implements SessionPart {
  readonly name = "turn deadline";
  readonly #ctx: SessionContext;
  /** The open turn's start time, once read (a turn's start never moves). */
  #started: { turn: number; at: number } | undefined;
  readonly #timer = new DueTimer();

  constructor(ctx: SessionContext) {
    this.#ctx = ctx;
  }

  nextDue(): number | undefined {
    const due = this.#due();
    return due?.at;
  }

  /**
   * As a pass begins: a timer ends the turn at its deadline even while a step is in flight. Set
   * for the open turn, or for the turn this pass is about to start (then moved to that turn's
   * time when it fires early); none while no turn runs, so an idle object holds no timer.
   */
  pump(): void {
    const seconds = this.#ctx.header()?.options.turnDeadlineSeconds;
    if (seconds === undefined) return;
    const open = this.#due();
    const starting = open === undefined && this.#ctx.turns.owesStep();
    this.#timer.set(open?.at ?? (starting ? Date.now() + seconds * 1000 : undefined), () => {
      if (this.#expire()) this.#ctx.kick();
      else this.pump();
    });
  }

  async step(): Promise<boolean> {
    return this.#expire();
  }

  /** Ends the open turn if its deadline has passed; true when it did. */
  #expire(): boolean {
    const due = this.#due();
    if (!due || due.at > Date.now()) return false;
    const { stores, turns } = this.#ctx;
    const cause = deadlineDiagnostic(due.seconds, "turn");
    const ended = stores.transact(() => {
      if (stores.loop.get().openTurn !== due.turn) return false;
      const closed = turns.closeForInterrupt(cause);
      // the deadline bounds this turn, not the child: what was queued goes on
      stores.loop.set({ ...stores.loop.get(), parked: false });
      return closed;
    });
    if (ended) turns.abortInFlight(cause);
    return ended;
  }

  /** The open turn's deadline, if the session has one. */
  #due(): { turn: number; at: number; seconds: number } | undefined {
    const seconds = this.#ctx.header()?.options.turnDeadlineSeconds;
    if (seconds === undefined) return undefined;
    const { openTurn: turn, turnStartSeq } = this.#ctx.stores.loop.get();
    if (turn === null || turnStartSeq === null) return undefined;
    if (this.#started?.turn !== turn) {
      const start = this.#ctx.stores.log.page(turnStartSeq - 1, 1)[0];
      if (!start) return undefined;
      this.#started = { turn, at: start.at };
    }
    return { turn, at: this.#started.at + seconds * 1000, seconds };
  }
}
