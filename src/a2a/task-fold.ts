import type { ContentBlock } from "../contract/content";
import type { SessionEvent, TurnEndReason } from "../contract/events";
import type { PendingApproval } from "../contract/session-api";

/**
 * A session read as an A2A task (docs/semantics.md §16): the task is the session. Each message a
 * user (an A2A client or the HTTP API) sent it has its own state: `submitted` once it is in the
 * inbox, `working` once a turn claimed it, and the end of that turn (`completed`, `canceled` for
 * an interrupt, `failed` otherwise, or when the message was discarded). The task's state is its
 * latest message's; a caller waiting for its own message reads that message's state. The final
 * assistant content of each ended turn is its result. A pure fold over the log, so a reader can
 * resume it with the events after `cursor` and never reads the log twice.
 *
 * A fold keeps what a task's answer can show, never the whole log (`FoldWindow`): the newest
 * messages of the history and the newest results, as many and as much text as the window says,
 * and the states of the newest user messages; it counts what it let go.
 */

/** What a fold keeps of the history and of the results (the newest first, the rest counted). */
export interface FoldWindow {
  /** The most history messages kept. */
  messages: number;
  /** The most results kept (at least the newest one: a task's status shows it). */
  results: number;
  /** The most text, in characters, the kept messages (and, apart, the kept results) hold. */
  chars: number;
}

/** The most user messages whose states a fold keeps (the oldest finished ones go first). */
export const MAX_TRACKED_MESSAGES = 1024;

export type TaskPhase = "submitted" | "working" | "completed" | "failed" | "canceled";

export interface FoldedMessage {
  role: "user" | "agent";
  /** The inbox message id (user) or `turn-<n>` (the turn's final agent message). */
  id: string;
  content: ContentBlock[];
}

/** One user message's progress: the turn that took it, and where it is. */
export interface MessageState {
  phase: TaskPhase;
  turn?: number;
  /** Why it failed (the turn's error, or why it was discarded). */
  reason?: string;
}

export interface TaskFold {
  /** The last seq folded (-1: none yet). */
  cursor: number;
  /** The latest user message's phase (`submitted` before any). */
  phase: TaskPhase;
  /** When the phase last changed (ms since the epoch; 0 before any event). */
  changedAt: number;
  /** The latest user message: the one the phase is about. */
  latest?: { messageId: string; turn?: number };
  /** Every user message's state, by inbox message id. */
  messages: Record<string, MessageState>;
  /** The turn running now, and its last non-empty assistant content so far. */
  running?: { turn: number; content: ContentBlock[] };
  /** Why the latest message's turn failed (its error) or was discarded. */
  reason?: string;
  /** The conversation as A2A sees it: user messages and each ended turn's final agent message. */
  history: FoldedMessage[];
  /** The final agent content of each ended turn that produced one, oldest first. */
  results: { turn: number; content: ContentBlock[] }[];
  /**
   * The tree's pending approvals (this session's and its descendants': their requests reach this
   * log), by approval id, oldest first: a working task that waits on one needs the user's input.
   */
  approvals: Record<string, PendingApproval>;
  /** What the fold keeps of `history` and `results`. */
  window: FoldWindow;
  /** How many older history messages and results the window let go. */
  dropped: { history: number; results: number };
}

/** Every message and result (a reader that bounds nothing: tests, small logs). */
const WHOLE: FoldWindow = {
  messages: Number.POSITIVE_INFINITY,
  results: Number.POSITIVE_INFINITY,
  chars: Number.POSITIVE_INFINITY,
};

export function emptyFold(window: FoldWindow = WHOLE): TaskFold {
  return {
    cursor: -1,
    phase: "submitted",
    changedAt: 0,
    messages: {},
    history: [],
    results: [],
    approvals: {},
    window,
    dropped: { history: 0, results: 0 },
  };
}

/**
 * Message contents a read left out of the log (their text was never copied out of it): an empty
 * content stands for each, with its event's seq and its text's length in characters, at most its
 * true length. A fold keeps them as it keeps any content (a superset of what it would keep of the
 * true texts, as they count no more); `fillText` then puts in the texts it kept.
 */
const leftOut = new WeakMap<readonly ContentBlock[], { seq: number; chars: number }>();

/** The content standing for the text of event `seq`, left out of a read: `chars` long at most. */
export function textLeftOut(seq: number, chars: number): ContentBlock[] {
  const content: ContentBlock[] = [];
  leftOut.set(content, { seq, chars });
  return content;
}

function charsOf(content: readonly ContentBlock[]): number {
  return leftOut.get(content)?.chars ?? content.reduce((n, block) => n + block.text.length, 0);
}

/** The seqs of the left-out texts the fold keeps (in its history, results and running turn). */
export function textsLeftOut(fold: TaskFold): number[] {
  const contents = [...fold.history, ...fold.results, ...(fold.running ? [fold.running] : [])];
  const seqs = new Set<number>();
  for (const { content } of contents) {
    const stub = leftOut.get(content);
    if (stub) seqs.add(stub.seq);
  }
  return [...seqs].sort((a, b) => a - b);
}

/**
 * The fold with its left-out texts put in (`texts`, by seq: every one `textsLeftOut` names), and
 * then kept within its window by their true lengths: the fold of the whole log.
 */
export function fillText(fold: TaskFold, texts: ReadonlyMap<number, ContentBlock[]>): TaskFold {
  const filled = (content: ContentBlock[]): ContentBlock[] => {
    const stub = leftOut.get(content);
    if (!stub) return content;
    const text = texts.get(stub.seq);
    if (text === undefined) throw new Error(`the text of event ${stub.seq} was not read`);
    return text;
  };
  const next: TaskFold = {
    ...fold,
    history: fold.history.map((m) => ({ ...m, content: filled(m.content) })),
    results: fold.results.map((r) => ({ ...r, content: filled(r.content) })),
    dropped: { ...fold.dropped },
  };
  if (fold.running) next.running = { ...fold.running, content: filled(fold.running.content) };
  keepHistory(next);
  const { results, chars } = next.window;
  next.dropped.results += keepNewest(next.results, Math.max(1, results), chars, (r) => r.content);
  return next;
}

/** Lets go of the oldest entries past `max` entries or `chars` of text (the newest always stays). */
function keepNewest<T>(list: T[], max: number, chars: number, content: (item: T) => ContentBlock[]): number {
  let kept = 0;
  let text = 0;
  for (let i = list.length - 1; i >= 0; i--) {
    text += charsOf(content(list[i]!));
    if (kept >= max || (kept > 0 && text > chars)) break;
    kept += 1;
  }
  const dropped = list.length - kept;
  if (dropped > 0) list.splice(0, dropped);
  return dropped;
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
  const next: TaskFold = {
    ...fold,
    messages: { ...fold.messages },
    history: [...fold.history],
    results: [...fold.results],
    approvals: { ...fold.approvals },
    dropped: { ...fold.dropped },
  };
  /** Sets a message's state; the task's phase follows its latest message. */
  const set = (messageId: string, state: MessageState, at: number) => {
    next.messages[messageId] = state;
    if (next.latest?.messageId !== messageId) return;
    next.latest = state.turn === undefined ? { messageId } : { messageId, turn: state.turn };
    if (next.phase !== state.phase) next.changedAt = at;
    next.phase = state.phase;
    if (state.reason === undefined) delete next.reason;
    else next.reason = state.reason;
  };
  for (const event of events) {
    if (event.seq <= next.cursor) continue;
    next.cursor = event.seq;
    switch (event.type) {
      case "agent/inbox/inserted": {
        const data = event.data as SessionEvent<"agent/inbox/inserted">["data"];
        if (data.source.kind !== "user") break;
        next.latest = { messageId: data.messageId };
        set(data.messageId, { phase: "submitted" }, event.at);
        break;
      }
      case "agent/inbox/claimed": {
        const data = event.data as SessionEvent<"agent/inbox/claimed">["data"];
        if (next.messages[data.messageId] === undefined) break;
        set(data.messageId, { phase: "working", turn: data.turn }, event.at);
        break;
      }
      case "agent/inbox/discarded": {
        const data = event.data as SessionEvent<"agent/inbox/discarded">["data"];
        const message = next.messages[data.messageId];
        if (message === undefined || message.turn !== undefined) break;
        set(
          data.messageId,
          { phase: "failed", reason: `the message was discarded: ${data.reason}` },
          event.at,
        );
        break;
      }
      case "turn/start": {
        const data = event.data as SessionEvent<"turn/start">["data"];
        next.running = { turn: data.turn, content: [] };
        break;
      }
      case "user/message": {
        const data = event.data as SessionEvent<"user/message">["data"];
        if (data.source.kind === "user") {
          next.history.push({ role: "user", id: data.messageId, content: data.content });
          keepHistory(next);
        }
        break;
      }
      case "assistant/message": {
        const data = event.data as SessionEvent<"assistant/message">["data"];
        if (next.running && charsOf(data.content) > 0)
          next.running = { ...next.running, content: data.content };
        break;
      }
      case "approval/requested": {
        const data = event.data as SessionEvent<"approval/requested">["data"];
        next.approvals[data.approvalId] = { ...data };
        break;
      }
      case "approval/decided": {
        const data = event.data as SessionEvent<"approval/decided">["data"];
        delete next.approvals[data.approvalId];
        break;
      }
      case "turn/end": {
        const data = event.data as SessionEvent<"turn/end">["data"];
        const content = next.running?.turn === data.turn ? next.running.content : [];
        delete next.running;
        if (charsOf(content) > 0) {
          next.history.push({ role: "agent", id: `turn-${data.turn}`, content });
          next.results.push({ turn: data.turn, content });
          keepHistory(next);
          const { results, chars } = next.window;
          next.dropped.results += keepNewest(next.results, Math.max(1, results), chars, (r) => r.content);
        }
        const phase = phaseOfEnd(data.reason);
        const reason =
          phase === "failed" ? (data.error ?? data.cause ?? `the turn ended: ${data.reason}`) : undefined;
        for (const [messageId, message] of Object.entries(next.messages)) {
          if (message.turn !== data.turn || isTerminal(message.phase)) continue;
          set(messageId, { phase, turn: data.turn, ...(reason === undefined ? {} : { reason }) }, event.at);
        }
        break;
      }
    }
  }
  forgetFinished(next);
  return next;
}

function keepHistory(fold: TaskFold): void {
  const { messages, chars } = fold.window;
  if (messages === 0) {
    fold.dropped.history += fold.history.length;
    fold.history.length = 0;
    return;
  }
  fold.dropped.history += keepNewest(fold.history, messages, chars, (m) => m.content);
}

/** Past MAX_TRACKED_MESSAGES, the oldest finished messages' states go (never the latest's). */
function forgetFinished(fold: TaskFold): void {
  const ids = Object.keys(fold.messages);
  let excess = ids.length - MAX_TRACKED_MESSAGES;
  for (const id of ids) {
    if (excess <= 0) return;
    if (id === fold.latest?.messageId || !isTerminal(fold.messages[id]!.phase)) continue;
    delete fold.messages[id];
    excess -= 1;
  }
}

/** The tree's pending approvals, oldest first. */
export function pendingApprovals(fold: TaskFold): PendingApproval[] {
  return Object.values(fold.approvals).sort((a, b) => a.requestedAt - b.requestedAt);
}

/** Whether a message still working waits on a person's decision (A2A `input-required`). */
export function needsInput(fold: TaskFold, messageId = fold.latest?.messageId): boolean {
  const phase = messageId === undefined ? fold.phase : (fold.messages[messageId]?.phase ?? fold.phase);
  return phase === "working" && Object.keys(fold.approvals).length > 0;
}

/** Whether the message has reached the end of its turn (or was discarded). */
export function messageDone(fold: TaskFold, messageId: string): boolean {
  const message = fold.messages[messageId];
  return message !== undefined && isTerminal(message.phase);
}

/** The result of the latest message's turn, when it ended with one. */
export function resultOf(fold: TaskFold): ContentBlock[] | undefined {
  const turn = fold.latest?.turn;
  if (turn === undefined || !isTerminal(fold.phase)) return undefined;
  return fold.results.find((r) => r.turn === turn)?.content;
}

/** Whether the latest message is still waiting in the inbox (no turn took it yet). */
export function latestQueued(fold: TaskFold): boolean {
  return fold.latest !== undefined && fold.latest.turn === undefined && fold.phase === "submitted";
}
