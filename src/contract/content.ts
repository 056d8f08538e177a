/** A content block. Only text is produced by the runtime; other block kinds pass through untouched. */
export interface TextBlock {
  type: "text";
  text: string;
}
export type ContentBlock = TextBlock;

/** The most blocks one piece of content may hold, on every route (HTTP, RPC, A2A, MCP). */
export const MAX_CONTENT_BLOCKS = 1000;

/** Content on the wire: a string, or an array of text blocks (content-schema.ts checks it). */
export type WireContent = string | TextBlock[];

export function toBlocks(content: WireContent): ContentBlock[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content.map((b) => ({ ...b }));
}

export function textOf(blocks: readonly ContentBlock[]): string {
  return blocks.map((b) => b.text).join("");
}

export function isEmptyContent(blocks: readonly ContentBlock[]): boolean {
  return blocks.every((b) => b.text.length === 0);
}
