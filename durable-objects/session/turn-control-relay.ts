import type { JsonValue } from "../../src/contract/json";
import type { ContentBlock } from "../../src/contract/content";
import type { TurnControl } from "../../src/agent/turn-control";

/**
 * The session context's turn control, attached to the turn driver once it exists. The driver and
 * the parts need each other (the driver's tools and turn-end hooks are the parts'; the parts end
 * turns and answer deferred tool calls), so the parts get this relay at construction and the
 * driver is attached right after, before anything runs. Using it unattached is a wiring bug.
 */
export class TurnControlRelay implements TurnControl {
  #driver: TurnControl | undefined;

  attach(driver: TurnControl): void {
    if (this.#driver) throw new Error("the turn driver is attached once");
    this.#driver = driver;
  }

  interrupt(cause: string): boolean {
    return this.#target().interrupt(cause);
  }

  closeForInterrupt(cause: string): boolean {
    return this.#target().closeForInterrupt(cause);
  }

  abortInFlight(cause: string): void {
    this.#target().abortInFlight(cause);
  }

  answerDeferred(
    turn: number,
    toolCallId: string,
    name: string,
    content: ContentBlock[],
    isError: boolean,
    structured?: JsonValue,
  ): boolean {
    return this.#target().answerDeferred(turn, toolCallId, name, content, isError, structured);
  }

  owesStep(): boolean {
    return this.#target().owesStep();
  }

  #target(): TurnControl {
    if (!this.#driver) throw new Error("the turn driver is not attached yet");
    return this.#driver;
  }
}
