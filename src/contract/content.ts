import * as z from "zod";
import { lazySchema } from "./lazy";

/** A content block. Only text is produced by the runtime; other block kinds pass through untouched. */
export const TextBlock = lazySchema(() => z.strictObject({ type: z.literal("text"), text: z.string() }));
export type TextBlock = z.infer<typeof TextBlock>;
export type ContentBlock = TextBlock;

/** The most blocks one piece of content may hold, on every route (HTTP, RPC, A2A, MCP). */
export const MAX_CONTENT_BLOCKS = 1000;

/** Content on the wire: a string, or an array of text blocks. */
export const WireContent = lazySchema(() =>
  z.union([z.string(), z.array(TextBlock).max(MAX_CONTENT_BLOCKS)]),
);
export type WireContent = z.infer<typeof WireContent>;

export function toBlocks(content: WireContent): ContentBlock[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content.map((b) => ({ ...b }));
}

export function textOf(blocks: readonly ContentBlock[]): string {
  return blocks.map((b) => b.text).join("");
}

export function isEmptyContent(blocks: readonly ContentBlock[]): boolean {
  return blocks.every((b) => b.text.length === 0);
}
