import type { ContentBlock } from "../contract/content";
import type { EventData, EventType, ToolCall } from "../contract/events";
import type { LoopState, PendingItem } from "../core/turn-plan";
import type { ConversationMessage } from "./model";

/**
 * What the turn driver needs of a session's storage (the session object's stores implement it):
 * synchronous transactions over the loop state, the inbox and the log.
 */
export interface DriverStores {
  transact<T>(fn: () => T): T;
  loop: { get(): LoopState; set(state: LoopState): void };
  inbox: {
    pending(): readonly PendingItem[];
    /** Marks a pending item claimed and returns what the user message needs. */
    claim(
      messageId: string,
    ): { content: ContentBlock[]; source: EventData["user/message"]["source"] } | undefined;
  };
  log: {
    append<T extends EventType>(type: T, data: EventData[T]): number;
    conversation(fromSeq: number): ConversationMessage[];
    /** Tool calls of the last assistant message at or after `fromSeq` that have no result yet. */
    unansweredToolCalls(fromSeq: number): ToolCall[];
  };
}
