import * as z from "zod";
import { lazySchema } from "./lazy";
import type { ChildInit } from "./child-init";
import type { WireContent as Content } from "./content";
import { WireContent } from "./content-schema";
import { DeadlineSeconds, MessageDelivery } from "./control";
import type { MessageSource } from "./events";
import { JurisdictionSchema, LocationHintSchema } from "./placement";
import type { Traced } from "./trace";
import { ApprovalFields, McpServersField, ModelParamsFields, ModelRoute, ToolFilterSchema } from "./wire";

/** A continuable start (HTTP body with mode "continuable", RPC argument, tool call). */
export const ContinuableStartSchema = lazySchema(() =>
  z.strictObject({
    provider: z.string().min(1).max(128),
    prompt: WireContent,
    label: z.string().min(1).max(200),
    childId: z.string().min(1).max(128).optional(),
    model: ModelRoute.optional(),
    ...ModelParamsFields,
    ...ApprovalFields,
    /** Each of the child's turns ends `aborted` if still running this long after it started. */
    deadlineSeconds: DeadlineSeconds.optional(),
    mcpServers: McpServersField.optional(),
    maxDepth: z.unknown().optional(),
    toolFilter: ToolFilterSchema.optional(),
    persona: z.string().max(32_768).optional(),
    jurisdiction: JurisdictionSchema.optional(),
    locationHint: LocationHintSchema.optional(),
  }),
);
export type ContinuableStart = z.infer<typeof ContinuableStartSchema>;

/** A continuable start as the session takes it: the caller's request and the span it came under. */
export type ChildStart = ContinuableStart & Traced;

export const FollowupBody = lazySchema(() =>
  z.strictObject({ content: WireContent, delivery: MessageDelivery.optional() }),
);

/** A follow-up to a continuable child as its parent takes it: the message and the span it came under. */
export type ChildFollowup = z.infer<typeof FollowupBody> & Traced;

/** A continuable child's `report` to its parent: its text and the span of the tool call that made it. */
export interface ChildReport extends Traced {
  text: string;
}
export const DrainBody = lazySchema(() =>
  z.strictObject({
    childIds: z.array(z.string().min(1).max(128)).max(256).optional(),
  }),
);

/** Parent -> new continuable child. Idempotent by (child id, parent, first run id). */
export type ContinuableInit = Omit<ChildInit, "mode" | "outputSchema"> & { mode: "continuable" };

export interface FollowupInput {
  from: string;
  content: Content;
  source: MessageSource;
  /** The run id the parent minted for a new epoch, used only if the child cold-resumes. */
  resumeRunId: string;
  /** Makes a re-sent follow-up (a tool call re-run after a crash) land once. */
  idempotencyKey?: string;
  /** How it joins the child's work (default `next-turn`). */
  delivery?: MessageDelivery;
}

export type InterruptAuthority =
  | { kind: "user"; parentSessionId: string }
  | { kind: "ancestor"; ancestorId: string };
