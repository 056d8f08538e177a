import { untilAborted } from "../core/abort";
import type { ToolFilter } from "../contract/tool-filter";
import * as z from "zod";
import type { ContentBlock } from "../contract/content";
import type { ToolSpec } from "./model";
import type { TraceContext } from "../contract/trace";

/**
 * Tools: zod-typed; arguments that fail the schema never reach `run` and become an error tool
 * result, and the turn goes on. Where a session's tools come from is tool-source.ts.
 */

export interface ToolContext {
  sessionId: string;
  /** Stable for the call across re-runs of the step: the turn number and the model's call id. */
  callKey: string;
  toolCallId: string;
  signal: AbortSignal;
  /**
   * This call's span (README "Traces"): its trace and its span id as the parent of what the call
   * causes (a child's first turn, a request to another agent or an MCP server, as `traceparent`).
   */
  trace: TraceContext;
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
  /** How long one call may take before it is an error result (none: as long as it takes). */
  timeoutMs?: number;
  /**
   * Calls of this tool in one model step may run at the same time as the step's other concurrent
   * calls (their results are still recorded in call order). For tools that only start work whose
   * results arrive later and share no state between calls, such as starting a subagent.
   */
  concurrent?: boolean;
  /** Every call waits for a person's decision before it runs (README "Approvals"). */
  needsApproval?: boolean;
  run(args: Args, context: ToolContext, host: Host): Promise<ToolOutcome> | ToolOutcome;
}

export type { ToolFilter };

export function text(value: string, isError = false): ToolOutcome {
  return isError
    ? { content: [{ type: "text", text: value }], isError }
    : { content: [{ type: "text", text: value }] };
}

/**
 * A tool with its argument type erased, for lists of tools: sound, because `run` only ever
 * receives what `schema` parsed.
 */
export function anyTool<Args, Host>(tool: Tool<Args, Host>): Tool<unknown, Host> {
  return tool as Tool<unknown, Host>;
}

/** The model's view of tools: name, description and JSON schema of the arguments. */
export function toolSpecs<Host>(tools: readonly Tool<unknown, Host>[]): ToolSpec[] {
  return tools.map((t) => ({
    name: t.name,
    description: t.description,
    parameters: t.parameters ?? parametersOf(t.schema),
  }));
}

/**
 * Runs one call. Unknown or filtered tools, invalid arguments, a thrown error, a result that is
 * not one and a call that outlives its timeout or an interrupt are error results, never throws: a
 * tool that hangs or ignores its signal is left behind, and the turn goes on.
 */
export async function executeTool<Host>(
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
    const detail = parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    return text(`Error: invalid arguments for ${name}: ${detail}`, true);
  }
  const timeout = tool.timeoutMs === undefined ? undefined : AbortSignal.timeout(tool.timeoutMs);
  const signal = timeout ? AbortSignal.any([context.signal, timeout]) : context.signal;
  try {
    return await untilAborted(
      Promise.resolve().then(() => tool.run(parsed.data, { ...context, signal }, host)),
      signal,
    );
  } catch (error) {
    if (timeout?.aborted && !context.signal.aborted)
      return text(`Error: ${name} timed out after ${tool.timeoutMs} ms`, true);
    return text(`Error: ${error instanceof Error ? error.message : String(error)}`, true);
  }
}

/** Whether a session's tool filter lets its model see `name` (`allow` first, then `deny`). */
export function filterAllows(filter: ToolFilter | undefined, name: string): boolean {
  if (!filter) return true;
  if (filter.allow && !filter.allow.includes(name)) return false;
  return !filter.deny?.includes(name);
}

/** JSON schemas of argument schemas, computed once per schema object (they are module constants). */
const jsonSchemas = new WeakMap<z.ZodType, Record<string, unknown>>();

/** The JSON schema a model is shown for an argument schema (throws when it has none). */
export function parametersOf(schema: z.ZodType): Record<string, unknown> {
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
