import * as z from "zod";
import {
  MAX_CONTENT_BLOCKS,
  type TextBlock as TextBlockType,
  type WireContent as WireContentType,
} from "./content";
import { lazySchema } from "./lazy";

/**
 * The schemas of content.ts's types, apart from them: the helpers over content (used by modules a
 * Worker loads at its start, like `aiSdkModel`) reach no zod.
 */

/** A text block, and nothing more. */
export const TextBlock = lazySchema(
  (): z.ZodType<TextBlockType> => z.strictObject({ type: z.literal("text"), text: z.string() }),
);

/** Content on the wire: a string, or an array of text blocks. */
export const WireContent = lazySchema(
  (): z.ZodType<WireContentType> => z.union([z.string(), z.array(TextBlock).max(MAX_CONTENT_BLOCKS)]),
);
