import {
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
} from "@opentelemetry/semantic-conventions/incubating";
import type { ContentBlock } from "../contract/content";
import type { Usage } from "../contract/events";
import type { Span } from "../contract/trace";

/**
 * How the span fold (spans.ts) writes what it records into a span's attributes, in the
 * OpenTelemetry GenAI semantic conventions' forms: the model's name, tokens and cost, a tool
 * call's end, and (with content, opt-in) message texts as the conventions' JSON, each value cut
 * to MAX_CONTENT_CHARS.
 */

/** The longest text one content attribute carries (a longer one is cut, marked). */
export const MAX_CONTENT_CHARS = 16_384;

/** `text`, cut to MAX_CONTENT_CHARS (marked where cut). */
export function cut(text: string): string {
  return text.length <= MAX_CONTENT_CHARS ? text : `${text.slice(0, MAX_CONTENT_CHARS)}…[cut]`;
}

/** The text of content blocks, a non-text block named in brackets. */
export function textOf(content: readonly ContentBlock[]): string {
  return content.map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join("\n");
}

/** `gen_ai.*.messages`: one message of `role` whose parts are its text and its tool calls. */
export function messagesJson(
  role: "user" | "assistant",
  texts: readonly string[],
  calls: readonly { id: string; name: string; args: unknown }[] = [],
  finish?: string,
): string {
  const parts = [
    ...texts.filter((t) => t.length > 0).map((content) => ({ type: "text", content })),
    ...calls.map((c) => ({ type: "tool_call", id: c.id, name: c.name, arguments: c.args })),
  ];
  return cut(JSON.stringify([{ role, parts, ...(finish ? { finish_reason: finish } : {}) }]));
}

/** The provider's model name of a route (`openai:gpt-4o-mini` → `gpt-4o-mini`). */
export function providerModel(route: string): string {
  const colon = route.indexOf(":");
  return colon < 0 ? route : route.slice(colon + 1);
}

/** Tokens and, where the model had a price, what they cost (`subagents.cost_usd`). */
export function usageAttributes(usage: Usage | undefined): Record<string, number> {
  return usage
    ? {
        [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: usage.inputTokens,
        [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: usage.outputTokens,
        ...(usage.costUsd === undefined ? {} : { "subagents.cost_usd": usage.costUsd }),
      }
    : {};
}

/** A tool call's span ends with its result; an error result is the span's error. */
export function answered(tool: Span, at: number, isError: boolean): void {
  tool.end = at;
  if (!isError) return;
  tool.error = "the tool's result is an error";
  tool.attributes["error.type"] = "tool_error";
}
