import { textOf } from "../contract/content";
import { compact } from "../core/compact";
import { type CompactionPlan, CHARS_PER_TOKEN } from "./context-view";
import type { ConversationMessage, ModelClient, ModelParams, ModelRequest } from "./model";

/**
 * How a session compacts its view (README "Long sessions"): when, what the summarizing call is
 * sent, and how a model's refusal of a too-long request is recognised. Pure.
 */

/** A session's context window when neither it nor its model route names one (DEFAULT_CONTEXT_WINDOW). */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

/** A step whose request is estimated past this share of the window compacts first. */
export const COMPACTION_THRESHOLD = 0.8;

/** The session's own `contextWindow`, else its model client's, else the deployment's. */
export function contextWindowOf(
  own: number | undefined,
  client: Pick<ModelClient, "contextWindow">,
  deployment: number,
): number {
  return own ?? client.contextWindow ?? deployment;
}

export function overThreshold(estimatedTokens: number, window: number): boolean {
  return estimatedTokens > window * COMPACTION_THRESHOLD;
}

/** The summarizing call's system prompt. */
export const SUMMARY_INSTRUCTION =
  "You compact the conversation of an agent session whose context window is full. " +
  "Write a summary that replaces the conversation below in the agent's context from now on. " +
  "Keep what the agent needs to go on: the user's goals and instructions, decisions made, facts " +
  "learned, results of tool calls and of subagents, identifiers, open questions and work left. " +
  "Fold any earlier summary in. Be concise; write plain text, no preamble.";

/** One message of the summarizing call's text holds at most this much (a summary keeps the gist). */
const MAX_ENTRY_CHARS = 4_000;
/** Fitted messages are not cut shorter than this: older ones are left out whole instead. */
const MIN_ENTRY_CHARS = 200;
/** A summary's length, in tokens, at most (and at most an eighth of the window). */
export const MAX_SUMMARY_TOKENS = 4_096;
/** Characters per token assumed when fitting the summarizing call's text (denser than estimates). */
const FIT_CHARS_PER_TOKEN = 3;

/**
 * The summarizing call's request: the replaced part of the view (with the previous summary, if
 * any) as one text, so every model can answer it without the tools the conversation used. The
 * summary may take an eighth of the window (at most MAX_SUMMARY_TOKENS); the previous summary is
 * kept whole, each message is cut to MAX_ENTRY_CHARS, and the text is fitted to what the window
 * leaves (oldest messages left out whole when cutting would leave little of each).
 */
export function compactionRequest(input: {
  model: string;
  previousSummary: string | undefined;
  plan: CompactionPlan;
  window: number;
  params: ModelParams | undefined;
  signal: AbortSignal;
}): ModelRequest {
  const { window } = input;
  const maxOutputTokens = summaryTokens(window, input.params);
  const room =
    (window - maxOutputTokens - Math.ceil(SUMMARY_INSTRUCTION.length / CHARS_PER_TOKEN) - 64) *
    FIT_CHARS_PER_TOKEN;
  const previous =
    input.previousSummary === undefined
      ? []
      : [cutEntry(`[earlier summary]\n${input.previousSummary}`, Math.max(MIN_ENTRY_CHARS, room / 2))];
  const budget = room - previous.reduce((n, e) => n + e.length + 2, 0);
  const messages = fitted(
    input.plan.replaced.map((i) => cutEntry(entryOf(i.message), MAX_ENTRY_CHARS)),
    budget,
  );
  const turn: ConversationMessage[] = [
    {
      role: "user",
      content: [{ type: "text", text: [...previous, ...messages].join("\n\n") }],
      source: { kind: "user" },
    },
  ];
  return {
    model: input.model,
    purpose: "compaction",
    system: SUMMARY_INSTRUCTION,
    turn,
    history: () => turn,
    tools: [],
    params: compact({ temperature: input.params?.temperature, maxOutputTokens }),
    contextWindow: window,
    signal: input.signal,
  };
}

/** The summary's output cap: an eighth of the window, at most MAX_SUMMARY_TOKENS and the session's own cap. */
export function summaryTokens(window: number, params: ModelParams | undefined): number {
  return Math.max(
    64,
    Math.min(params?.maxOutputTokens ?? MAX_SUMMARY_TOKENS, MAX_SUMMARY_TOKENS, Math.floor(window / 8)),
  );
}

/** One message of the replaced part as a line of the summarizing call's text. */
function entryOf(message: ConversationMessage): string {
  const text = textOf(message.content);
  if (message.role === "user") {
    const { source } = message;
    const from =
      source.kind === "user"
        ? "user"
        : source.kind === "schedule"
          ? `schedule ${source.scheduleId}`
          : `${source.kind} ${source.senderSessionId}`;
    return `[${from}]\n${text}`;
  }
  if (message.role === "tool")
    return `[result of ${message.name}${message.isError ? " (error)" : ""}]\n${text}`;
  const calls = message.toolCalls.map((c) => `[assistant calls ${c.name}] ${JSON.stringify(c.args ?? {})}`);
  return [...(text ? [`[assistant]\n${text}`] : []), ...calls].join("\n");
}

/**
 * The entries, joined by blank lines, in at most `budget` characters: the longest cut to one common
 * length (short ones stay whole); when that length would be under MIN_ENTRY_CHARS, the oldest
 * entries are left out whole instead, behind one line that says how many.
 */
export function fitted(entries: readonly string[], budget: number): string[] {
  let kept = entries;
  let omitted = 0;
  for (;;) {
    const head = omitted > 0 ? [`[${omitted} earlier messages omitted]`] : [];
    const room = budget - head.reduce((n, e) => n + e.length + 2, 0) - 2 * kept.length;
    const cap = commonCap(
      kept.map((e) => e.length),
      room,
    );
    if (cap >= MIN_ENTRY_CHARS || kept.length <= 1)
      return [...head, ...kept.map((e) => cutEntry(e, Math.max(cap, MIN_ENTRY_CHARS)))];
    const dropped = Math.ceil(kept.length / 2);
    kept = kept.slice(dropped);
    omitted += dropped;
  }
}

/** The largest length c with sum(min(length, c)) <= budget (Infinity when all fit whole). */
function commonCap(lengths: readonly number[], budget: number): number {
  if (lengths.reduce((n, l) => n + l, 0) <= budget) return Number.POSITIVE_INFINITY;
  const sorted = [...lengths].sort((a, b) => a - b);
  let left = budget;
  for (const [index, length] of sorted.entries()) {
    const share = left / (sorted.length - index);
    if (length > share) return Math.max(0, Math.floor(share));
    left -= length;
  }
  return Number.POSITIVE_INFINITY;
}

/** `entry` in at most `cap` characters, with a marker saying how much was cut. */
function cutEntry(entry: string, cap: number): string {
  if (entry.length <= cap) return entry;
  const kept = Math.max(0, cap - 40);
  return `${entry.slice(0, kept)} [… ${entry.length - kept} characters cut]`;
}

/**
 * Whether a provider's failure is a refusal of the request as longer than the model's context:
 * an OpenAI-compatible `context_length_exceeded`, Anthropic's "prompt is too long", Google's
 * "input token count … exceeds", and the like, on a 400 (or 413 or 422) or with no status.
 */
export function isContextOverflow(status: number | undefined, text: string): boolean {
  if (status !== undefined && status !== 400 && status !== 413 && status !== 422) return false;
  return OVERFLOW.test(text);
}

/**
 * The model's window as its refusal states it (OpenAI's "maximum context length is N tokens",
 * Anthropic's "N tokens > M maximum"), when it does.
 */
export function statedContextLimit(text: string): number | undefined {
  const match =
    /maximum context length is (\d+)/i.exec(text) ??
    /> ?(\d+) maximum/i.exec(text) ??
    /maximum (?:number of )?tokens allowed \(?(\d+)/i.exec(text);
  const limit = match ? Number(match[1]) : Number.NaN;
  return Number.isSafeInteger(limit) && limit > 0 ? limit : undefined;
}

/** The details of a refusal as too long, for a `ModelError`. */
export function overflowDetails(text: string): { contextOverflow: true; contextLimit?: number } {
  const limit = statedContextLimit(text);
  return { contextOverflow: true, ...(limit === undefined ? {} : { contextLimit: limit }) };
}

const OVERFLOW =
  /context[_ ]length[_ ]exceeded|maximum context length|context (window|length) (is )?exceeded|exceeds? (the )?(model'?s? )?(maximum )?context|prompt is too long|prompt too long|input is too long|too many (input )?tokens|input token count .*exceeds|string_above_max_length|reduce the length of the (messages|prompt)/i;
