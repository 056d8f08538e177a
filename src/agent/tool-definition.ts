import type * as z from "zod";
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
  /** Every call waits for a person's decision before it runs (README "Approvals"). */
  readonly needsApproval?: boolean;
  run(input: never, context: ToolRunContext<E>): Promise<ToolResult> | ToolResult;
}

/** What `defineTool` accepts: `run` is typed by the input schema. */
export interface ToolDefinitionInput<Input extends z.ZodType, E> {
  name: string;
  description: string;
  input: Input;
  timeoutMs?: number;
  needsApproval?: boolean;
  run(input: z.output<Input>, context: ToolRunContext<E>): Promise<ToolResult> | ToolResult;
}

/** Tool names the model API accepts (OpenAI, Anthropic and Gemini agree on this much). */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** A user tool call runs at most this long unless its definition says otherwise. */
export const DEFAULT_TOOL_TIMEOUT_MS = 5 * 60_000;

/**
 * Why `input` cannot be a tool's input (undefined when it can). Model APIs and MCP take a tool's
 * arguments only as an object, so the JSON schema the model is shown must have `type: "object"`.
 * Checked when the Worker's module loads: a session's MCP face could not list such a tool, and a
 * model API would refuse every turn that offers it. The schema derives its JSON schema itself
 * (zod 4's `toJSONSchema` method, the same derivation as `z.toJSONSchema`), so this check loads
 * none of the runtime's own zod at a Worker's start.
 */
export function toolInputProblem(input: unknown): string | undefined {
  const wanted = "its input must be a zod object schema (z.object({...}))";
  if (typeof (input as { safeParse?: unknown } | null)?.safeParse !== "function") {
    const fields = rawShapeFields(input);
    if (fields === undefined) return wanted;
    const shown = fields.length > 4 ? `${fields.slice(0, 4).join(", ")}, ...` : fields.join(", ");
    return `its input must be a zod object schema, not a raw shape: write z.object({ ${shown} })`;
  }
  // zod 4's schemas (of any copy of zod the Worker bundles) carry `_zod`; zod 3's have no JSON schema
  if (!("_zod" in (input as object))) return `${wanted}; this one is not a zod 4 schema`;
  const derive = (input as { toJSONSchema?: unknown }).toJSONSchema;
  // zod/mini's schemas have no such method: their definition says what they describe
  if (typeof derive !== "function")
    return (input as { _zod: { def?: { type?: unknown } } })._zod.def?.type === "object" ? undefined : wanted;
  let json: Record<string, unknown>;
  try {
    json = derive.call(input, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  } catch (error) {
    return `${wanted}; this one has no JSON schema: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (json.type === "object") return undefined;
  const composed = ["anyOf", "oneOf", "allOf"].find((key) => key in json);
  const described = typeof json.type === "string" ? json.type : (composed ?? "any value");
  return `${wanted}: model APIs and MCP take a tool's arguments only as an object, and this one describes ${described}`;
}

/** The field names of a raw zod shape (`{ city: z.string() }`), or undefined when `input` is none. */
function rawShapeFields(input: unknown): string[] | undefined {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return undefined;
  const entries = Object.entries(input);
  const isSchema = (value: unknown) =>
    typeof (value as { safeParse?: unknown } | null)?.safeParse === "function";
  if (entries.length === 0 || !entries.every(([, value]) => isSchema(value))) return undefined;
  return entries.map(([key]) => key);
}
