import type { z } from "zod";
import type { ContentBlock } from "../contract/content";

/**
 * The public shape of an embedding Worker's tool (`defineTool`), apart from how the runtime runs
 * it (user-tools.ts): what `run` gets and may answer.
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
