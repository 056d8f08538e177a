import * as z from "zod";
import { lazySchema } from "./lazy";

/**
 * The durable descriptor (`subagent/descriptor` event): how a child was established. One-shot:
 * {version, mode, provider, label?}; continuable: {version, mode, provider, label, agentProvider?,
 * agentModel?, persona?, toolFilter?}. Optional keys are absent, never undefined; unknown keys
 * make a descriptor malformed.
 */

export const DESCRIPTOR_VERSION = 2;

const StoredToolFilter = lazySchema(() =>
  z
    .strictObject({ allow: z.array(z.string()).optional(), deny: z.array(z.string()).optional() })
    .refine((filter) => Object.keys(filter).length > 0, "toolFilter is empty"),
);

export const DescriptorSchema = lazySchema(() =>
  z.discriminatedUnion("mode", [
    z.strictObject({
      version: z.literal(DESCRIPTOR_VERSION),
      mode: z.literal("one-shot"),
      provider: z.string(),
      label: z.string().exactOptional(),
    }),
    z.strictObject({
      version: z.literal(DESCRIPTOR_VERSION),
      mode: z.literal("continuable"),
      provider: z.string(),
      label: z.string(),
      agentProvider: z.string().exactOptional(),
      agentModel: z.string().exactOptional(),
      persona: z.string().exactOptional(),
      toolFilter: StoredToolFilter.exactOptional(),
    }),
  ]),
);

export type Descriptor = z.infer<typeof DescriptorSchema>;
