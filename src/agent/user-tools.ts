import type { z } from "zod";
import type { ContentBlock } from "../contract/content";
import type { SessionHost } from "./host";
import { staticToolSource, type ToolSource } from "./tool-source";
import type { Tool, ToolOutcome } from "./tools";

/**
 * The tools an embedding Worker brings (`defineTool`, `createSubagents({ tools })`): a name, a
 * description for the model, a zod input schema and a `run` that gets the parsed input and the
 * call's context. They are one tool source, offered to every session and its children after the
 * built-in tools, under each session's tool filter.
 *
 * A tool call is at-least-once: a crash (or an eviction) between the call and the durable append
 * of its result runs it again on the next activation, with the same `callKey`. A tool with side
 * effects uses `callKey` as its idempotency key.
 */

/** What a tool's `run` gets besides its input. */
export interface ToolRunContext<E> {
  /** The Worker's env: its bindings (KV, D1, Durable Objects, AI), vars and secrets. */
  env: E;
  /** The session whose model called the tool. */
  sessionId: string;
  /**
   * Stable across re-runs of this call (after a crash), unique across sessions and calls: use it
   * as the idempotency key of a side effect.
   */
  callKey: string;
  /** The model's id for this call. */
  toolCallId: string;
  /** Aborted when the session is interrupted or the call times out; pass it to `fetch` and friends. */
  signal: AbortSignal;
}

/** A tool's answer: a string (one text block), or content with an optional error flag. */
export type ToolResult = string | { content: string | ContentBlock[]; isError?: boolean };

/** A tool of the embedding Worker, as `defineTool` returns it. */
export interface ToolDefinition<E = unknown> {
  readonly name: string;
  readonly description: string;
  readonly input: z.ZodType;
  /** How long one call may run before it is an error result (default 5 minutes). */
  readonly timeoutMs?: number;
  run(input: never, context: ToolRunContext<E>): Promise<ToolResult> | ToolResult;
}

/** What `defineTool` accepts: `run` is typed by the input schema. */
export interface ToolDefinitionInput<Input extends z.ZodType, E> {
  name: string;
  description: string;
  input: Input;
  timeoutMs?: number;
  run(input: z.output<Input>, context: ToolRunContext<E>): Promise<ToolResult> | ToolResult;
}

/** Tool names the model API accepts (OpenAI, Anthropic and Gemini agree on this much). */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** A user tool call runs at most this long unless its definition says otherwise. */
export const DEFAULT_TOOL_TIMEOUT_MS = 5 * 60_000;

/** The user's tools as one source; `env` is the Worker's env of the object that runs them. */
export function userToolSource<E>(
  definitions: readonly ToolDefinition<E>[],
  env: E,
): ToolSource<SessionHost> {
  return staticToolSource<SessionHost>(
    "user",
    definitions.map((definition) => asTool(definition, env)),
  );
}

function asTool<E>(definition: ToolDefinition<E>, env: E): Tool<unknown, SessionHost> {
  return {
    name: definition.name,
    description: definition.description,
    schema: definition.input,
    timeoutMs: definition.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
    async run(input, context): Promise<ToolOutcome> {
      const result = await definition.run(input as never, {
        env,
        sessionId: context.sessionId,
        callKey: `${context.sessionId}/${context.callKey}`,
        toolCallId: context.toolCallId,
        signal: context.signal,
      });
      return outcomeOf(result);
    },
  };
}

function outcomeOf(result: ToolResult): ToolOutcome {
  if (typeof result === "string") return { content: [{ type: "text", text: result }] };
  if (result === null || typeof result !== "object" || !("content" in result))
    throw new Error("the tool returned neither a string nor { content }");
  const content: ContentBlock[] =
    typeof result.content === "string"
      ? [{ type: "text", text: result.content }]
      : result.content.map((block) => {
          if (block?.type !== "text" || typeof block.text !== "string")
            throw new Error("the tool returned a content block that is not { type: 'text', text }");
          return { type: "text", text: block.text };
        });
  return result.isError === true ? { content, isError: true } : { content };
}
