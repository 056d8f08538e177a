import type { ContentBlock } from "../contract/content";
import type { EventData, EventType, ToolCall, Usage } from "../contract/events";
import type { LoopState, PendingItem } from "../core/turn-plan";
import type { ContextView } from "./context-view";

/**
 * What a session's turns need of its storage (the session object's stores implement it):
 * synchronous transactions over the loop state, the inbox and the log, which tool calls run as
 * long-lived work, and the usage that counts against the token budget.
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
    /** The model's view of the conversation (kept in memory; never the whole log). */
    view(): ContextView;
    /** Tool calls of the last assistant message at or after `fromSeq` that have no result yet. */
    unansweredToolCalls(fromSeq: number): ToolCall[];
    /** The bytes the log holds (for its quota). */
    bytes(): number;
  };
  /** A compaction a caller asked for (POST …/compact), kept until one is written. */
  compaction: {
    /** Undefined when none is pending; else the idle summarizing calls begun for it. */
    pending(): number | undefined;
    attempted(): void;
    done(): void;
  };
  runs: {
    /** Which tool calls (by call key) are long-running work already in flight. */
    inFlight(callKeys: readonly string[]): Set<string>;
  };
  approvals: {
    /** Which tool calls (by call key) wait for a person's decision. */
    waiting(callKeys: readonly string[]): Set<string>;
    /** Of these calls, the approved ones whose run has not begun; their first run is claimed. */
    claimFirstRuns(callKeys: readonly string[]): Set<string>;
  };
  usage: {
    /** Inside the transaction that appends a step's `assistant/message`: the usage it reported. */
    addOwn(usage: Usage): void;
    /** Inside the transaction that appends a `context/compacted`: its summarizing call's usage. */
    addCompaction(usage: Usage): void;
  };
}
