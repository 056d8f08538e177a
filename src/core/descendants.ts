import type { Usage } from "../contract/events";
import type { ChildEntry, DescendantEntry } from "../contract/listing";
import { addUsage, sumUsage } from "./usage";

/**
 * Discovery rows (semantics.md §9): children ordered by `createdAt` then id; descendants in a stable
 * pre-order with `parentId` and `depth`, guarded against cycles. Pure.
 */

/** A row as callers see it (the internal `foreign` mark removed). */
export function publicEntry<T extends ChildEntry>(entry: T): T {
  if (entry.kind !== "diagnostic" || !entry.foreign) return entry;
  const { foreign: _foreign, ...row } = entry;
  return row as T;
}

/**
 * Each row's `subtreeUsage`: its own usage plus that of the rows below it (pre-order: a row's
 * subtree is the rows after it that are deeper, up to the next row at its depth or above).
 */
export function withSubtreeUsage(rows: readonly DescendantEntry[]): DescendantEntry[] {
  const totals: (Usage | undefined)[] = rows.map((row) => (row.kind === "child" ? row.usage : undefined));
  const out = rows.map((row) => ({ ...row }));
  const open: number[] = [];
  const close = (index: number): void => {
    const total = totals[index];
    if (total) out[index]!.subtreeUsage = total;
    const parent = open.at(-1);
    if (parent !== undefined) totals[parent] = addUsage(totals[parent], total);
  };
  for (const [i, row] of rows.entries()) {
    while (open.length > 0 && rows[open.at(-1)!]!.depth >= row.depth) close(open.pop()!);
    open.push(i);
  }
  while (open.length > 0) close(open.pop()!);
  return out;
}

/** A tree's total: its root's own usage plus every listed row's own (rows that could not be read add nothing). */
export function treeUsage(own: Usage | undefined, rows: readonly DescendantEntry[]): Usage | undefined {
  return addUsage(own, sumUsage(rows.map((row) => (row.kind === "child" ? row.usage : undefined))));
}

/**
 * Walks a tree in pre-order. `childrenOf` lists one node's children (already ordered); the walk is
 * iterative (deep chains are fine) and never visits an id twice.
 */
export async function preOrder(
  rootId: string,
  childrenOf: (id: string) => Promise<ChildEntry[]>,
  expand: (entry: ChildEntry) => boolean,
): Promise<DescendantEntry[]> {
  const out: DescendantEntry[] = [];
  const visited = new Set<string>([rootId]);
  const stack: { parentId: string; depth: number; entries: ChildEntry[]; next: number }[] = [
    { parentId: rootId, depth: 1, entries: await childrenOf(rootId), next: 0 },
  ];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    const entry = frame.entries[frame.next++];
    if (entry === undefined) {
      stack.pop();
      continue;
    }
    if (visited.has(entry.id)) continue;
    if (entry.kind === "diagnostic" && entry.foreign) {
      // a stray row: shown where it was found, but it neither claims the id nor brings its subtree
      const { foreign: _foreign, ...row } = entry;
      out.push({ ...row, parentId: frame.parentId, depth: frame.depth });
      continue;
    }
    visited.add(entry.id);
    out.push({ ...entry, parentId: frame.parentId, depth: frame.depth });
    if (expand(entry))
      stack.push({
        parentId: entry.id,
        depth: frame.depth + 1,
        entries: await childrenOf(entry.id),
        next: 0,
      });
  }
  return out;
}
