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
export const SUMMARY_INSTRUCTION = [
  "You compact the conversation of an agent session whose context window is full.",
  "Write a summary that replaces the conversation below in the agent's context from now on.",
  "Keep what the agent needs to go on: the user's goals and instructions, decisions made, facts",
  "learned, results of tool calls and of subagents, identifiers, open questions and work left.",
  "Fold any earlier summary in. Be concise; write plain text, no preamble.",
].join(" ");

/** One message of the summarizing call's text holds at most this much (a summary keeps the gist). */
const MAX_ENTRY_CHARS = 4_000;

/**
 * The summarizing call's request: the replaced part of the view (with the previous summary, if
 * any) as one text, so every model can answer it without the tools the conversation used. Each
 * message is cut to MAX_ENTRY_CHARS and the text fitted to half the window; the summary may take
 * up to an eighth of it.
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
  const entries = [
    ...(input.previousSummary === undefined ? [] : [`[earlier summary]\n${input.previousSummary}`]),
    ...input.plan.replaced.map((i) => entryOf(i.message)),
  ];
  const transcript = fitted(
    entries.map((e) => cutEntry(e, MAX_ENTRY_CHARS)),
    (window * CHARS_PER_TOKEN) / 2,
  ).join("\n\n");
  const turn: ConversationMessage[] = [
    {
      role: "user",
      content: [{ type: "text", text: transcript }],
      source: { kind: "user" },
    },
  ];
  const maxOutputTokens = Math.max(
    64,
    Math.min(input.params?.maxOutputTokens ?? Number.POSITIVE_INFINITY, Math.floor(window / 8)),
  );
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

/** One message of the replaced part as a line of the summarizing call's text. */
function entryOf(message: ConversationMessage): string {
  const text = textOf(message.content);
  if (message.role === "user") {
    const from =
      message.source.kind === "user" ? "user" : `${message.source.kind} ${message.source.senderSessionId}`;
    return `[${from}]\n${text}`;
  }
  if (message.role === "tool")
    return `[result of ${message.name}${message.isError ? " (error)" : ""}]\n${text}`;
  const calls = message.toolCalls.map((c) => `[assistant calls ${c.name}] ${JSON.stringify(c.args ?? {})}`);
  return [...(text ? [`[assistant]\n${text}`] : []), ...calls].join("\n");
}

/** The entries cut to one common length so that together they fit `budget` characters. */
export function fitted(entries: readonly string[], budget: number): string[] {
  const total = entries.reduce((n, e) => n + e.length, 0);
  if (total <= budget) return [...entries];
  // the largest cap c with sum(min(length, c)) <= budget: short entries stay whole
  const lengths = entries.map((e) => e.length).sort((a, b) => a - b);
  let left = budget;
  let cap = 0;
  for (const [index, length] of lengths.entries()) {
    const share = left / (lengths.length - index);
    if (length > share) {
      cap = Math.floor(share);
      break;
    }
    left -= length;
    cap = length;
  }
  return entries.map((e) => cutEntry(e, cap));
}

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
