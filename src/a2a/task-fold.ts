import { type ContentBlock, isEmptyContent } from "../contract/content";
import type { SessionEvent, TurnEndReason } from "../contract/events";

/**
 * A session read as an A2A task (protocols.md, "A2A"): the task is the session, and its state is
 * the state of the latest message a user (an A2A client or the HTTP API) sent it: `submitted`
 * once the message is in the inbox, `working` once a turn claimed it, and the end of that turn
 * (`completed`, `canceled` for an interrupt, `failed` otherwise). The latest ended turn's final
 * assistant text is the task's result. A pure fold over the log, so a reader can resume it with
 * the events after `cursor` and never reads the log twice.
 */

export type TaskPhase = "submitted" | "working" | "completed" | "failed" | "canceled";

export interface FoldedMessage {
  role: "user" | "agent";
  /** The inbox message id (user) or `turn-<n>` (the turn's final agent message). */
  id: string;
  content: ContentBlock[];
}

export interface TaskFold {
  /** The last seq folded (-1: none yet). */
  cursor: number;
  phase: TaskPhase;
  /** When the phase last changed (ms since the epoch; 0 before any event). */
  changedAt: number;
  /** The latest user message: the one the phase is about. */
  latest?: { messageId: string; turn?: number };
  /** The turn running now, and its last non-empty assistant content so far. */
  running?: { turn: number; content: ContentBlock[] };
  /** Why the latest message's turn failed (its error) or was discarded. */
  reason?: string;
  /** The conversation as A2A sees it: user messages and each ended turn's final agent message. */
  history: FoldedMessage[];
  /** The final agent content of each ended turn that produced one, oldest first. */
  results: { turn: number; content: ContentBlock[] }[];
}

export function emptyFold(): TaskFold {
  return { cursor: -1, phase: "submitted", changedAt: 0, history: [], results: [] };
}

export function isTerminal(phase: TaskPhase): boolean {
  return phase === "completed" || phase === "failed" || phase === "canceled";
}

function phaseOfEnd(reason: TurnEndReason): TaskPhase {
  if (reason === "completed") return "completed";
  return reason === "aborted" ? "canceled" : "failed";
}

/** Folds `events` (in seq order, after `fold.cursor`) into a new fold; `fold` is not changed. */
export function foldTask(fold: TaskFold, events: readonly SessionEvent[]): TaskFold {
  const next: TaskFold = { ...fold, history: [...fold.history], results: [...fold.results] };
  const enter = (phase: TaskPhase, at: number) => {
    if (next.phase !== phase) next.changedAt = at;
    next.phase = phase;
  };
  for (const event of events) {
    if (event.seq <= next.cursor) continue;
    next.cursor = event.seq;
    switch (event.type) {
      case "agent/inbox/inserted": {
        const data = event.data as SessionEvent<"agent/inbox/inserted">["data"];
        if (data.source.kind !== "user") break;
        next.latest = { messageId: data.messageId };
        delete next.reason;
        enter(next.running ? "working" : "submitted", event.at);
        break;
      }
      case "agent/inbox/claimed": {
        const data = event.data as SessionEvent<"agent/inbox/claimed">["data"];
        if (next.latest?.messageId !== data.messageId) break;
        next.latest = { messageId: data.messageId, turn: data.turn };
        enter("working", event.at);
        break;
      }
      case "agent/inbox/discarded": {
        const data = event.data as SessionEvent<"agent/inbox/discarded">["data"];
        if (next.latest?.messageId !== data.messageId || next.latest.turn !== undefined) break;
        next.reason = `the message was discarded: ${data.reason}`;
        enter("failed", event.at);
        break;
      }
      case "turn/start": {
        const data = event.data as SessionEvent<"turn/start">["data"];
        next.running = { turn: data.turn, content: [] };
        break;
      }
      case "user/message": {
        const data = event.data as SessionEvent<"user/message">["data"];
        if (data.source.kind === "user")
          next.history.push({ role: "user", id: data.messageId, content: data.content });
        break;
      }
      case "assistant/message": {
        const data = event.data as SessionEvent<"assistant/message">["data"];
        if (next.running && data.content.length > 0 && !isEmptyContent(data.content))
          next.running = { ...next.running, content: data.content };
        break;
      }
      case "turn/end": {
        const data = event.data as SessionEvent<"turn/end">["data"];
        const content = next.running?.turn === data.turn ? next.running.content : [];
        delete next.running;
        if (content.length > 0) {
          next.history.push({ role: "agent", id: `turn-${data.turn}`, content });
          next.results.push({ turn: data.turn, content });
        }
        if (next.latest?.turn !== data.turn) break;
        const phase = phaseOfEnd(data.reason);
        if (phase === "failed") next.reason = data.error ?? data.cause ?? `the turn ended: ${data.reason}`;
        else delete next.reason;
        enter(phase, event.at);
        break;
      }
    }
  }
  return next;
}

/** The result of the latest message's turn, when it ended with one. */
export function resultOf(fold: TaskFold): ContentBlock[] | undefined {
  const turn = fold.latest?.turn;
  if (turn === undefined || !isTerminal(fold.phase)) return undefined;
  return fold.results.find((r) => r.turn === turn)?.content;
}
