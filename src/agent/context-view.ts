import type { ContentBlock } from "../contract/content";
import type { EventData, EventType } from "../contract/events";
import type { ConversationMessage } from "./model";

/**
 * A session's view: what its model sees of the conversation (README "Long sessions"). It is the
 * latest compaction's summary, then every conversation event after that compaction's boundary,
 * oldest first. The log is never rewritten: the view is rebuilt from it (the latest
 * `context/compacted` and the events after its `throughSeq`) and then kept up to date by every
 * event the log appends, so a step reads nothing of the log's older part.
 *
 * Sizes are estimated at four characters a token. A message over a quarter of the window is sent
 * cut, with a marker saying how much was left out; a turn that ended `CONTEXT_OVERFLOW` has its
 * messages cut to a sixteenth, so one oversized result never poisons the session.
 */

/** The events a view is built from. */
export const VIEW_EVENTS = [
  "user/message",
  "assistant/message",
  "tool/result",
  "turn/start",
  "turn/end",
  "context/compacted",
] as const satisfies readonly EventType[];

/** Characters per token, where nothing better is known. */
export const CHARS_PER_TOKEN = 4;
/** What one message costs besides its text (role, framing), in characters. */
const MESSAGE_OVERHEAD_CHARS = 16;

/** One conversation message of the view. */
export interface ViewItem {
  seq: number;
  /** The turn it belongs to. */
  turn: number;
  message: ConversationMessage;
  /** Its estimated size in characters, uncut. */
  chars: number;
  /** For an assistant message: the input tokens its step's request took, as the model reported. */
  inputTokens?: number;
}

export interface ViewCompaction {
  seq: number;
  throughSeq: number;
  summary: string;
}

/** The part of the view a compaction would replace. */
export interface CompactionPlan {
  replaced: ViewItem[];
  /** The seq of the last event replaced. */
  throughSeq: number;
}

export class ContextView {
  #compaction: ViewCompaction | undefined;
  #items: ViewItem[] = [];
  /** The newest `turn/start`'s turn: what the next conversation events belong to. */
  #turn = 0;
  /** Turns that ended because their request was too long even after a compaction. */
  readonly #overflowed = new Set<number>();

  /** Builds a view from the latest compaction (if any) and every view event after its boundary. */
  static from(
    events: Iterable<{ seq: number; type: EventType; data: unknown }>,
    latest?: { seq: number; data: EventData["context/compacted"] },
  ): ContextView {
    const view = new ContextView();
    if (latest) view.observe(latest.seq, "context/compacted", latest.data);
    for (const e of events) view.observe(e.seq, e.type, e.data);
    return view;
  }

  /** Takes in one event the log appended (or read), in seq order; other types change nothing. */
  observe(seq: number, type: EventType, data: unknown): void {
    switch (type) {
      case "turn/start":
        this.#turn = (data as EventData["turn/start"]).turn;
        return;
      case "turn/end": {
        const end = data as EventData["turn/end"];
        if (end.code === "CONTEXT_OVERFLOW") this.#overflowed.add(end.turn);
        return;
      }
      case "context/compacted": {
        const c = data as EventData["context/compacted"];
        if (this.#compaction && this.#compaction.seq >= seq) return;
        this.#compaction = { seq, throughSeq: c.throughSeq, summary: c.summary };
        this.#items = this.#items.filter((i) => i.seq > c.throughSeq);
        return;
      }
      case "user/message":
      case "assistant/message":
      case "tool/result": {
        if (this.#compaction && seq <= this.#compaction.throughSeq) return;
        if (this.#items.length > 0 && this.#items[this.#items.length - 1]!.seq >= seq) return;
        const message = toMessage(type, data);
        const usage =
          type === "assistant/message" ? (data as EventData["assistant/message"]).usage : undefined;
        this.#items.push({
          seq,
          turn: this.#turn,
          message,
          chars: charsOf(message),
          ...(usage ? { inputTokens: usage.inputTokens } : {}),
        });
        return;
      }
      default:
        return;
    }
  }

  get compaction(): ViewCompaction | undefined {
    return this.#compaction;
  }

  /** The messages the model sees, the summary first; each one cut to what the window allows. */
  messages(window: number, fromSeq = -1): ConversationMessage[] {
    const out: ConversationMessage[] = [];
    if (fromSeq < 0 && this.#compaction) out.push(summaryMessage(this.#compaction.summary, window));
    for (const item of this.#items) if (item.seq >= fromSeq) out.push(this.#shown(item, window).message);
    return out;
  }

  /**
   * The request's estimated size in tokens: the newest step's reported input tokens plus what was
   * appended since, or every message of the view plus `fixedChars` (system prompt and tools) at
   * four characters a token, whichever is larger (a provider that under-reports is not trusted).
   */
  estimate(window: number, fixedChars: number): number {
    const since = this.#compaction?.seq ?? -1;
    let chars = 0;
    let reported: number | undefined;
    for (let i = this.#items.length - 1; i >= 0; i--) {
      const item = this.#items[i]!;
      chars += this.#shown(item, window).chars;
      if (reported === undefined && item.inputTokens !== undefined && item.seq > since)
        reported = item.inputTokens + tokens(chars);
    }
    const summary = this.#compaction ? charsOf(summaryMessage(this.#compaction.summary, window)) : 0;
    return Math.max(reported ?? 0, tokens(fixedChars + summary + chars));
  }

  /** The estimated size in tokens of the view a compaction with `summary` through `throughSeq` leaves. */
  estimateAfter(window: number, fixedChars: number, summary: string, throughSeq: number): number {
    let chars = fixedChars + charsOf(summaryMessage(summary, window));
    for (const item of this.#items) if (item.seq > throughSeq) chars += this.#shown(item, window).chars;
    return tokens(chars);
  }

  /**
   * What a compaction replaces: every message of the turns before the current one (`openTurn`;
   * while none is open, the next) and the one before it, so a turn in progress is never split and
   * a tool call never leaves its result. The turn before the current one is replaced too when it
   * overflowed (kept, it would overflow again) or when `tight` (the model refused the request and
   * nothing older was left). Undefined when nothing would be replaced.
   */
  plan(openTurn: number | null, { tight = false } = {}): CompactionPlan | undefined {
    const current = openTurn ?? this.#turn + 1;
    const keepFrom = tight || this.#overflowed.has(current - 1) ? current : current - 1;
    const replaced = this.#items.filter((i) => i.turn < keepFrom);
    if (replaced.length === 0) return undefined;
    return { replaced, throughSeq: replaced[replaced.length - 1]!.seq };
  }

  /**
   * An item as the model sees it: whole, or cut to the limit of its turn. A quarter of the window
   * in tokens is `window` characters (CHARS_PER_TOKEN 4); a sixteenth, `window / 4`.
   */
  #shown(item: ViewItem, window: number): { message: ConversationMessage; chars: number } {
    const limit = this.#overflowed.has(item.turn) ? window / 4 : window;
    if (item.chars <= limit) return item;
    const message = cutMessage(item.message, Math.max(200, Math.floor(limit)));
    return { message, chars: charsOf(message) };
  }
}

/** The summary as the model sees it: a user message opening the view. */
export function summaryMessage(summary: string, window: number): ConversationMessage {
  const text = `Summary of the earlier conversation (older turns were compacted):\n\n${summary}`;
  return { role: "user", content: [{ type: "text", text: cutText(text, window) }], source: { kind: "user" } };
}

export function tokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** The estimated size of one message, in characters. */
export function charsOf(message: ConversationMessage): number {
  let chars = MESSAGE_OVERHEAD_CHARS;
  for (const block of message.content) chars += block.text.length;
  if (message.role === "assistant")
    for (const call of message.toolCalls) chars += call.name.length + JSON.stringify(call.args ?? {}).length;
  if (message.role === "tool") chars += message.name.length;
  return chars;
}

/** `text` cut to `limit` characters with a marker saying how much was left out. */
export function cutText(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const kept = Math.max(0, limit - 120);
  return `${text.slice(0, kept)}\n[… ${text.length - kept} characters cut here; the session's log keeps the whole text]`;
}

/** A message whose text is cut to about `limit` characters in all (tool call arguments stay whole). */
function cutMessage(message: ConversationMessage, limit: number): ConversationMessage {
  let left = limit;
  const content: ContentBlock[] = message.content.map((block) => {
    const text = cutText(block.text, Math.max(0, left));
    left -= text.length;
    return { type: "text", text };
  });
  return { ...message, content };
}

function toMessage(
  type: "user/message" | "assistant/message" | "tool/result",
  data: unknown,
): ConversationMessage {
  if (type === "user/message") {
    const d = data as EventData["user/message"];
    return { role: "user", content: d.content, source: d.source };
  }
  if (type === "assistant/message") {
    const d = data as EventData["assistant/message"];
    return { role: "assistant", content: d.content, toolCalls: d.toolCalls ?? [] };
  }
  const d = data as EventData["tool/result"];
  return { role: "tool", toolCallId: d.toolCallId, name: d.name, content: d.content, isError: d.isError };
}
