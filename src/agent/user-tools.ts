import type { ContentBlock } from "../contract/content";
import { DEFAULT_TOOL_TIMEOUT_MS, type ToolDefinition, type ToolResult } from "./tool-definition";
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
    ...(definition.needsApproval === true ? { needsApproval: true } : {}),
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
