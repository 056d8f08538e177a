import { z } from "zod";
import { JurisdictionSchema, LocationHintSchema } from "../core/placement";
import { WireContent } from "./content";

/** Zod schemas of every HTTP body and query. Strict: unknown fields are rejected. */

export const MAX_BODY_BYTES = 256 * 1024;

const Name = z.string().min(1).max(128);
export const ToolFilterSchema = z
  .strictObject({ allow: z.array(Name).max(256).optional(), deny: z.array(Name).max(256).optional() })
  .refine((f) => f.allow !== undefined || f.deny !== undefined, {
    message: "toolFilter needs allow or deny",
  });

export const ModelRoute = z.string().min(1).max(200);

export const CreateSessionBody = z.strictObject({
  model: ModelRoute.optional(),
  persona: z.string().max(32_768).optional(),
  toolFilter: ToolFilterSchema.optional(),
  label: z.string().min(1).max(200).optional(),
  providers: z.array(Name).max(32).optional(),
  backgroundMode: z.enum(["one-shot", "continuable"]).optional(),
  reportDelivery: z.enum(["quiet", "next-step", "wakeup"]).optional(),
  jurisdiction: JurisdictionSchema.optional(),
  locationHint: LocationHintSchema.optional(),
});

export const SendMessageBody = z.strictObject({
  content: WireContent,
  idempotencyKey: z.string().min(1).max(200).optional(),
});

const IntParam = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d{1,16}$/, "must be an integer")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

export const EventsQuery = z.strictObject({
  after: IntParam(-1, Number.MAX_SAFE_INTEGER).default(-1),
  limit: IntParam(1, 500).default(100),
});

export const DirectoryQuery = z.strictObject({
  limit: IntParam(1, 200).default(50),
  cursor: z.string().min(3).max(100).optional(),
});

export const StreamQuery = z.strictObject({ after: IntParam(-1, Number.MAX_SAFE_INTEGER).default(-1) });
