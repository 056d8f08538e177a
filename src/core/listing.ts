import type { Jurisdiction, LocationHint } from "./placement";

/**
 * Discovery rows (contract 5.5): children ordered by `createdAt` then id; descendants in a stable
 * pre-order with `parentId` and `depth`, guarded against cycles. Pure.
 */

export type ChildEntry =
  | {
      kind: "child";
      id: string;
      activity: "running" | "inactive";
      hasChildren: boolean;
      mode: "one-shot" | "continuable";
      label?: string;
      status: "running" | "waiting" | "idle";
      provider: string;
      createdAt: number;
      jurisdiction?: Jurisdiction;
      locationHint?: LocationHint;
    }
  | {
      kind: "diagnostic";
      id: string;
      reason: "corrupt" | "unavailable" | "unsupported";
      createdAt: number;
      /** Its header names another parent: listed here, but it belongs elsewhere in the tree. */
      foreign?: true;
    };

export type DescendantEntry = ChildEntry & { parentId: string; depth: number };

/** A row as callers see it (the internal `foreign` mark removed). */
export function publicEntry<T extends ChildEntry>(entry: T): T {
  if (entry.kind !== "diagnostic" || !entry.foreign) return entry;
  const { foreign: _foreign, ...row } = entry;
  return row as T;
}

export function orderEntries<T extends { id: string; createdAt: number }>(entries: readonly T[]): T[] {
  return [...entries].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
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
