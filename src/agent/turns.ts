import type { ContentBlock } from "../contract/content";
import type { TurnEndReason } from "../contract/events";
import type { JsonValue } from "../contract/json";
import { compact } from "../core/compact";
import { type LoopState, type Plan, planStep } from "../core/turn-plan";
import { callKey } from "./call-keys";
import type { DriverStores } from "./driver-stores";
import { EXTERNAL_MODEL } from "./external-session";
import { withoutAttempts } from "./step-limits";
import type { TurnControl } from "./turn-control";
import type { TurnSettings } from "./turn-settings";

/** Where a session's turn ends are announced, inside the transaction that appends `turn/end`. */
export interface TurnEnds {
  turnEnded(turn: number, reason: TurnEndReason, turnStartSeq: number): void;
}

/** What ends a turn besides its reason: the interrupt's cause, or the error and its stable code. */
export type TurnEndDetail = {
  cause?: string;
  error?: string;
  code?: "BUDGET_EXCEEDED" | "QUOTA_EXCEEDED" | "CONTEXT_OVERFLOW";
};

/** The position of one step: a result is appended only while the loop is still there (`current`). */
export interface Fence {
  epoch: number;
  turn: number;
  step: number;
  /** A model step's first attempt, claimed in the transaction that opened the step. */
  attempt?: number;
}

/**
 * A session's turns as durable state: what the next step would do, ending a turn (its `turn/end`
 * and the announcement to `ends`), interrupts, answers to deferred tool calls, and the external
 * calls of this instance that an interrupt aborts. Built before the parts of a session (they end
 * turns and answer tool calls through it) and before the turn driver, which runs the steps.
 */
export class Turns implements TurnControl {
  readonly #stores: DriverStores;
  readonly #settings: () => TurnSettings;
  readonly #ends: TurnEnds;
  /** In-flight external calls; aborted by an interrupt. Memory only: eviction drops them anyway. */
  readonly #inFlight = new Set<AbortController>();

  constructor(stores: DriverStores, settings: () => TurnSettings, ends: TurnEnds) {
    this.#stores = stores;
    this.#settings = settings;
    this.#ends = ends;
  }

  /** A session driven from outside (`model: "external"`, an MCP client): it runs no turns. */
  external(): boolean {
    return this.#settings().modelRoute === EXTERNAL_MODEL;
  }

  /** What the next step would do, from durable state only (no side effects). */
  plan(): Plan {
    const stores = this.#stores;
    const loop = stores.loop.get();
    const turn = loop.openTurn;
    const unanswered = loop.turnStartSeq === null ? [] : stores.log.unansweredToolCalls(loop.turnStartSeq);
    const keys = turn === null ? [] : unanswered.map((c) => callKey(turn, c.id));
    // long-running work in flight, and calls waiting for a person's decision: their answers come later
    const running = keys.length === 0 ? new Set<string>() : stores.runs.inFlight(keys);
    const waiting = keys.length === 0 ? new Set<string>() : stores.approvals.waiting(keys);
    return planStep({
      loop,
      pending: stores.inbox.pending(),
      unanswered,
      inFlight: new Set(
        unanswered
          .filter((c) => {
            const key = callKey(turn!, c.id);
            return running.has(key) || waiting.has(key);
          })
          .map((c) => c.id),
      ),
    });
  }

  /** Whether a step is owed now (a turn that waits for long-running tool calls owes nothing). */
  owesStep(): boolean {
    if (this.external()) return this.#stores.inbox.pending().length > 0;
    const kind = this.plan().kind;
    return kind !== "idle" && kind !== "await-tools";
  }

  /** Ends the open turn as `aborted` and parks pending work until the next waking delivery. */
  interrupt(cause: string): boolean {
    const changed = this.#stores.transact(() => this.closeForInterrupt(cause));
    if (changed) this.abortInFlight(cause);
    return changed;
  }

  /**
   * The durable half of an interrupt, for callers that compose it into their own transaction;
   * they call `abortInFlight` once it committed.
   */
  closeForInterrupt(cause: string): boolean {
    const stores = this.#stores;
    const loop = stores.loop.get();
    const pending = stores.inbox.pending();
    if (loop.openTurn === null && !pending.some((p) => p.waking)) return false;
    const closed = loop.openTurn === null ? loop : this.end(loop, "aborted", { cause });
    stores.loop.set({ ...closed, epoch: closed.epoch + 1, parked: true });
    return true;
  }

  abortInFlight(cause: string): void {
    for (const controller of this.#inFlight) controller.abort(new Error(`interrupted (${cause})`));
    this.#inFlight.clear();
  }

  /** An external call of this instance, aborted by an interrupt until the returned release is called. */
  track(controller: AbortController): () => void {
    this.#inFlight.add(controller);
    return () => this.#inFlight.delete(controller);
  }

  /** Appends the result of a (deferred) tool call if its turn is still open and it is unanswered. */
  answerDeferred(
    turn: number,
    toolCallId: string,
    name: string,
    content: ContentBlock[],
    isError: boolean,
    structured?: JsonValue,
  ): boolean {
    const stores = this.#stores;
    const loop = stores.loop.get();
    if (loop.openTurn !== turn || loop.turnStartSeq === null) return false;
    const open = stores.log.unansweredToolCalls(loop.turnStartSeq);
    if (!open.some((c) => c.id === toolCallId)) return false;
    stores.log.append("tool/result", {
      toolCallId,
      name,
      content,
      isError,
      ...compact({ structured }),
    });
    return true;
  }

  /** Whether the loop is still at the fenced step (no interrupt or newer step meanwhile). */
  current(fence: Fence): boolean {
    const loop = this.#stores.loop.get();
    return loop.epoch === fence.epoch && loop.openTurn === fence.turn && loop.step === fence.step;
  }

  /**
   * Inside a transaction: appends `turn/end` for the open turn of `loop`, announces it, and
   * stores the closed loop (its usage and attempts cleared), which it returns.
   */
  end(loop: LoopState, reason: TurnEndReason, detail: TurnEndDetail = {}): LoopState {
    const stores = this.#stores;
    const turn = loop.openTurn!;
    stores.log.append("turn/end", { turn, reason, ...detail, ...(loop.usage ? { usage: loop.usage } : {}) });
    this.#ends.turnEnded(turn, reason, loop.turnStartSeq!);
    const { usage: _usage, trace: _trace, ...rest } = withoutAttempts(loop);
    const closed = { ...rest, openTurn: null, turnStartSeq: null, step: 0 };
    stores.loop.set(closed);
    return closed;
  }
}
