import type { JsonValue } from "./json";
import * as z from "zod";
import { lazySchema } from "./lazy";
import type { ContentBlock } from "./content";
import type { Usage } from "./events";
import type { Traced } from "./trace";
import { WireContent } from "./content-schema";
import { JurisdictionSchema, LocationHintSchema } from "./placement";
import { DeadlineSeconds } from "./control";
import { ApprovalFields, McpServersField, ModelParamsFields, ModelRoute, ToolFilterSchema } from "./wire";

/** Known stop reasons; consumers treat any other value as a failure. */
export type SubagentStopReason = "completed" | "aborted" | "error" | "max-tokens" | "refusal";

export interface SubagentResult {
  output: ContentBlock[];
  /** The value captured by `structured_output` (JSON, valid against the run's `outputSchema`). */
  structured?: JsonValue;
  stopReason: SubagentStopReason;
  diagnostic?: string;
  /** The tokens the child's model steps used for this run (when its model reported them). */
  usage?: Usage;
  /**
   * Only on the way from a local child to its parent, never stored or shown: the child's `usage`
   * plus what its own local children had reported of theirs when the result was made (semantics.md
   * §8). The parent counts it in its `subtreeUsage` and keeps the result without it.
   */
  subtreeUsage?: Usage;
}

/** `GET /v1/sessions/:id/runs/:runId`. */
export interface RunView {
  runId: string;
  id: string;
  provider: string;
  local: boolean;
  state: "running" | "settled";
  result?: SubagentResult;
  taskId?: string;
  /**
   * An out-of-process run's counterpart, once it exists: the remote deployment's session, the
   * ACP agent's session or the A2A agent's task.
   */
  counterpart?: RunCounterpart;
}

export interface RunCounterpart {
  kind: "remote" | "acp" | "a2a";
  id: string;
}

/** A one-shot start as the caller states it (HTTP body minus `mode`, RPC argument, tool call). */
export const StartRequestSchema = lazySchema(() =>
  z.strictObject({
    provider: z.string().min(1).max(128),
    prompt: WireContent,
    label: z.string().min(1).max(200).optional(),
    childId: z.string().min(1).max(128).optional(),
    model: ModelRoute.optional(),
    ...ModelParamsFields,
    ...ApprovalFields,
    /** The run ends `aborted` if still working this long after its acceptance. */
    deadlineSeconds: DeadlineSeconds.optional(),
    mcpServers: McpServersField.optional(),
    // Form and subset are checked by the start sequence itself, in the contract's order.
    outputSchema: z.unknown().optional(),
    maxDepth: z.unknown().optional(),
    toolFilter: ToolFilterSchema.optional(),
    persona: z.string().max(32_768).optional(),
    jurisdiction: JurisdictionSchema.optional(),
    locationHint: LocationHintSchema.optional(),
  }),
);
export type StartRequest = z.infer<typeof StartRequestSchema>;

/** A one-shot start as the session takes it: the caller's request and the span it came under. */
export type RunStart = StartRequest & Traced;

export const StartSubagentBody = lazySchema(() =>
  StartRequestSchema.extend({
    mode: z.enum(["one-shot", "continuable"]),
  }),
);

/** `POST .../subagents` one-shot answer and the RPC handle's identity. */
export interface StartedRun {
  runId: string;
  id: string;
  local: boolean;
}
