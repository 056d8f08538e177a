import { quote } from "../core/quote";
import * as z from "zod";
import { lazySchema } from "../contract/lazy";
import { outputValidator } from "../core/json-schema-subset";
import { DeadlineSeconds } from "../contract/control";
import { renderForeground, renderTask } from "../core/run-rendering";
import type { ProviderInfo } from "../providers/catalog";
import type { SessionHost } from "./host";
import { text, type Tool } from "./tools";

/**
 * The model-facing delegation tools (semantics.md §5.7): one `subagent` tool per configured
 * provider (the first is `subagent`, others `subagent_<provider>`), `task_output` / `task_kill`
 * for background runs, and `structured_output` inside children that were given an output schema.
 */

export const DEFAULT_TOOL_MAX_DEPTH = 3;

export function subagentToolName(provider: string, index: number): string {
  return index === 0 ? "subagent" : `subagent_${provider}`;
}

const SubagentArgs = lazySchema(() =>
  z.strictObject({
    description: z.string().min(1).max(200).describe("A short label for the task (3-5 words)."),
    prompt: z.string().min(1).max(200_000).describe("The task for the subagent."),
    run_in_background: z
      .boolean()
      .optional()
      .describe("Run in the background and collect it later with task_output."),
    deadline_seconds: DeadlineSeconds.optional().describe(
      "Stop it if still working after this many seconds.",
    ),
  }),
);
type SubagentArgs = z.infer<typeof SubagentArgs>;

/**
 * `backgroundMode` decides what `run_in_background: true` starts: a continuable child (reports,
 * follow-ups, one settlement notice; the session default) or a one-shot background task collected
 * with `task_output`. Without `run_in_background` the call runs in the foreground.
 */
export function subagentTool(
  provider: ProviderInfo,
  toolName: string,
  backgroundMode: "one-shot" | "continuable" = "one-shot",
): Tool<SubagentArgs, SessionHost> {
  const context = provider.inheritsParentContext
    ? "The subagent already sees the completed turns of this conversation; say only what is new."
    : "The subagent starts with no context: give it a standalone, complete prompt.";
  return {
    name: toolName,
    description: `Delegate a task to a subagent (provider "${provider.name}") and get its final answer. ${context}`,
    schema: SubagentArgs,
    // a step's subagent calls start their children side by side (each start is idempotent by call key)
    concurrent: true,
    async run(args, ctx, host) {
      const continuable = backgroundMode === "continuable" && provider.continuable;
      const background = args.run_in_background ?? false;
      if (background && continuable) {
        const started = await host.startContinuable(
          {
            provider: provider.name,
            prompt: args.prompt,
            label: args.description,
            ...(provider.capabilities.depthLimit ? { maxDepth: DEFAULT_TOOL_MAX_DEPTH } : {}),
            ...(args.deadline_seconds === undefined ? {} : { deadlineSeconds: args.deadline_seconds }),
            trace: ctx.trace,
          },
          ctx.callKey,
        );
        return started.ok
          ? text(`started subagent ${started.value.childId}`)
          : text(`Error: ${started.message}`, true);
      }
      const started = await host.startRun(
        {
          provider: provider.name,
          prompt: args.prompt,
          label: args.description,
          ...(provider.capabilities.depthLimit ? { maxDepth: DEFAULT_TOOL_MAX_DEPTH } : {}),
          ...(args.deadline_seconds === undefined ? {} : { deadlineSeconds: args.deadline_seconds }),
          trace: ctx.trace,
        },
        { callKey: ctx.callKey, toolName, background },
      );
      if (!started.ok) return text(`Error: ${started.message}`, true);
      const run = started.value;
      if (background) return text(`started background subagent task ${run.taskId}`);
      if (run.state === "settled" && run.result) {
        const rendered = renderForeground(run.result);
        return text(rendered.text, rendered.isError);
      }
      return { deferred: true };
    },
  };
}

export const taskOutputTool: Tool<{ task_id: string }, SessionHost> = {
  name: "task_output",
  description: "Read the output of a background subagent task (idempotent).",
  schema: lazySchema(() => z.strictObject({ task_id: z.string().min(1).max(64) })),
  run(args, _ctx, host) {
    const run = host.task(args.task_id);
    if (!run) return text(`Error: unknown task ${quote(args.task_id)}`, true);
    return text(renderTask(run.state === "settled" ? run.result : undefined));
  },
};

export const taskKillTool: Tool<{ task_id: string; reason?: string | undefined }, SessionHost> = {
  name: "task_kill",
  description: "Stop a background subagent task.",
  schema: lazySchema(() =>
    z.strictObject({ task_id: z.string().min(1).max(64), reason: z.string().max(500).optional() }),
  ),
  run(args, _ctx, host) {
    const killed = host.killTask(args.task_id, args.reason ?? "background subagent task killed");
    return killed.ok
      ? text(`requested cancellation of task ${args.task_id}`)
      : text(`Error: ${killed.message}`, true);
  },
};

/** The capture tool of a child that must answer in a given shape; a valid call concludes the turn. */
export function structuredOutputTool(schema: Record<string, unknown>): Tool<unknown, SessionHost> {
  // patterns are matched by linear-pattern.ts, never compiled as JS RegExps (json-schema-subset.ts)
  const validator = outputValidator(schema);
  return {
    name: "structured_output",
    description: "Submit your final answer in the required structure. Calling it ends your turn.",
    schema: validator,
    parameters: schema,
    run(args) {
      return {
        content: [{ type: "text", text: "structured output captured" }],
        structured: args,
        concludesTurn: true,
      };
    },
  };
}
