import type { JsonValue } from "../contract/json";
import type { ContentBlock } from "../contract/content";

/**
 * What the parts of a session may ask of its turn driver, and nothing more: end the open turn
 * (an interrupt, a cancel, a drain), abort the model call in flight, answer a tool call whose
 * result came later (a foreground child's), and say whether a step is owed. The driver itself
 * runs steps only when the drive loop asks.
 */
export interface TurnControl {
  /** Ends the open turn as `aborted` and parks pending work; true when something changed. */
  interrupt(cause: string): boolean;
  /** The durable half of an interrupt, inside the caller's transaction; then `abortInFlight`. */
  closeForInterrupt(cause: string): boolean;
  /** Aborts the external calls of this instance (after the transaction that closed the turn). */
  abortInFlight(cause: string): void;
  /** Inside a transaction: the result of a deferred tool call, if its turn is still open. */
  answerDeferred(
    turn: number,
    toolCallId: string,
    name: string,
    content: ContentBlock[],
    isError: boolean,
    structured?: JsonValue,
  ): boolean;
  /** Whether a step is owed now (a turn to start or continue). */
  owesStep(): boolean;
}
