import type { ToolFilter } from "../contract/tool-filter";
import { z } from "zod";
import type { ContentBlock } from "../contract/content";
import type { ToolSpec } from "./model";

/**
 * The tool registry. Tools are zod-typed; arguments that fail the schema never reach `run` and
 * become an error tool result, and the turn goes on.
 */

export interface ToolContext {
  sessionId: string;
  /** Stable for the call across re-runs of the step: the turn number and the model's call id. */
  callKey: string;
  toolCallId: string;
  signal: AbortSignal;
}

/** A tool either answers now or promises a result that a later delivery appends (e.g. a child run). */
export type ToolOutcome =
  | { content: ContentBlock[]; isError?: boolean; structured?: unknown; concludesTurn?: boolean }
  | { deferred: true };

export interface Tool<Args = unknown, Host = unknown> {
  name: string;
  description: string;
  schema: z.ZodType<Args>;
  /** JSON schema shown to the model when it is not derived from `schema` (e.g. a caller's output schema). */
  parameters?: Record<string, unknown>;
  run(args: Args, context: ToolContext, host: Host): Promise<ToolOutcome> | ToolOutcome;
}

export type { ToolFilter };

export function text(value: string, isError = false): ToolOutcome {
  return isError
    ? { content: [{ type: "text", text: value }], isError }
    : { content: [{ type: "text", text: value }] };
}

export class ToolRegistry<Host> {
  readonly #tools = new Map<string, Tool<unknown, Host>>();

  register<Args>(tool: Tool<Args, Host>): this {
    if (this.#tools.has(tool.name)) throw new Error(`tool ${tool.name} is already registered`);
    this.#tools.set(tool.name, tool as Tool<unknown, Host>);
    return this;
  }

  names(): string[] {
    return [...this.#tools.keys()];
  }

  /** Names in a filter that no registered tool has: a start naming one fails loudly. */
  unknownNames(filter: ToolFilter): string[] {
    return [...(filter.allow ?? []), ...(filter.deny ?? [])].filter((n) => !this.#tools.has(n));
  }

  /** The tools visible to a session under its filter; `always` survive any filter (e.g. `report`). */
  visible(filter: ToolFilter | undefined, hidden: ReadonlySet<string> = new Set()): Tool<unknown, Host>[] {
    return [...this.#tools.values()].filter((t) => !hidden.has(t.name) && allowed(t.name, filter));
  }

  specs(tools: readonly Tool<unknown, Host>[]): ToolSpec[] {
    return tools.map((t) => ({
      name: t.name,
      description: t.description,
      parameters: t.parameters ?? parametersOf(t.schema),
    }));
  }

  /** Runs one call. Unknown or filtered tools and invalid arguments are error results, not throws. */
  async execute(
    visibleTools: readonly Tool<unknown, Host>[],
    name: string,
    args: unknown,
    context: ToolContext,
    host: Host,
  ): Promise<ToolOutcome> {
    const tool = visibleTools.find((t) => t.name === name);
    if (!tool) return text(`Error: unknown tool "${name}"`, true);
    const parsed = tool.schema.safeParse(args);
    if (!parsed.success) {
      const detail = parsed.error.issues
        .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`)
        .join("; ");
      return text(`Error: invalid arguments for ${name}: ${detail}`, true);
    }
    try {
      return await tool.run(parsed.data, context, host);
    } catch (error) {
      return text(`Error: ${error instanceof Error ? error.message : String(error)}`, true);
    }
  }
}

function allowed(name: string, filter: ToolFilter | undefined): boolean {
  if (!filter) return true;
  if (filter.allow && !filter.allow.includes(name)) return false;
  return !filter.deny?.includes(name);
}

/** JSON schemas of argument schemas, computed once per schema object (they are module constants). */
const jsonSchemas = new WeakMap<z.ZodType, Record<string, unknown>>();

function parametersOf(schema: z.ZodType): Record<string, unknown> {
  let json = jsonSchemas.get(schema);
  if (!json) {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
      io: "input",
      unrepresentable: "any",
    }) as Record<string, unknown>;
    json = rest;
    jsonSchemas.set(schema, json);
  }
  return json;
}
