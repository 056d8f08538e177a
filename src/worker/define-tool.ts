import type * as z from "zod";
import { type ToolDefinition, type ToolDefinitionInput, toolInputProblem } from "../agent/tool-definition";

/**
 * A tool for your sessions' models: `input` is a zod schema (its JSON schema is what the model
 * sees; arguments that fail it are an error result the model can read, and `run` never sees
 * them), `run` gets the parsed input and the call's context (`env`, `sessionId`, `callKey`,
 * `signal`). A string result is one text block; a thrown error is an error result; the turn goes
 * on either way. Calls are at-least-once across crashes: make side effects idempotent by `callKey`.
 * An input that does not describe an object (model APIs and MCP take nothing else) throws here,
 * naming the tool, when the Worker's module loads.
 */
export function defineTool<Input extends z.ZodType, E = Cloudflare.Env>(
  definition: ToolDefinitionInput<Input, E>,
): ToolDefinition<E> {
  const problem = toolInputProblem(definition.input);
  if (problem) throw new TypeError(`defineTool: tool ${JSON.stringify(definition.name)}: ${problem}`);
  return Object.freeze({ ...definition }) as ToolDefinition<E>;
}
