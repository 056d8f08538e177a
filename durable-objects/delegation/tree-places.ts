import type { ChildInit } from "../../src/contract/child-init";
import { type Outcome, ok } from "../../src/contract/errors";
import { treeRefusal } from "../../src/core/quotas";
import type { SessionContext } from "../session/session-context";

// The tree quota (MAX_SESSIONS_PER_TREE).
//
// A tree is a top-level session and every session below it; its root keeps the one count. The
// root's own children are its `children` rows (written before each child exists, deleted when a
// start is refused), so a start from the root costs no extra write. Every deeper child takes a
// slot from the root before anything of it is stored (its object asks in `init`, keyed by its id,
// so a retried init counts once): the root keeps each such child's slot and their number
// (store/tree-slots.ts). Such a slot is never given back, even when that child's creation then
// fails. Runs outside this deployment (remote, ACP, A2A) are no sessions of the tree.

/** The sessions the tree of this (top-level) session holds: itself, its children and deeper ones. */
export function treeSize(ctx: SessionContext, local = ctx.stores.children.count()): number {
  return 1 + local + ctx.stores.treeSlots.count();
}

/**
 * At the root: a slot in its tree for a session below one of its descendants, unless that child
 * has one already (a retried init); else `422 QUOTA_EXCEEDED`.
 */
export function reserveTreeSlot(ctx: SessionContext, childId: string): Outcome<void> {
  const { treeSlots } = ctx.stores;
  if (treeSlots.has(childId)) return ok(undefined);
  const refused = treeRefusal(treeSize(ctx), ctx.limits.treeCap);
  if (refused) return refused;
  ctx.stores.transact(() => treeSlots.take(childId));
  return ok(undefined);
}

/** The root's side of `takeTreeSlot`, as the child's object reaches it. */
export interface TreeRoot {
  reserveTreeSlot(childId: string): Promise<Outcome<void>>;
}

/**
 * In a new child's object, before anything of it is stored: a child whose parent is not the top
 * of its tree (its lineage holds more than the root) takes its slot from the root
 * (`lineage[0]`); a child of the root was counted by the root when it placed it, and a child
 * that exists already (a retried init) was counted when it was created.
 */
export async function takeTreeSlot(
  spec: Pick<ChildInit, "id" | "lineage">,
  exists: boolean,
  root: (id: string) => TreeRoot,
): Promise<Outcome<void>> {
  const top = spec.lineage[0];
  if (exists || top === undefined || spec.lineage.length < 2) return ok(undefined);
  return root(top).reserveTreeSlot(spec.id);
}

/** A tree root's places for the sessions below its children. */
export class TreePlaces {
  readonly #ctx: SessionContext;

  constructor(ctx: SessionContext) {
    this.#ctx = ctx;
  }

  reserve(childId: string): Outcome<void> {
    return reserveTreeSlot(this.#ctx, childId);
  }
}
