import type { TableSql } from "./first-use-tables";
import type { Flags } from "./flags";

/**
 * At a tree's root (MAX_SESSIONS_PER_TREE, delegation/child-spec.ts): the sessions below its
 * children that took a place in its tree, one row each (`tree_slots`, so a retried `init` takes
 * none again), and their number (the `tree-slots` flag, which the tree's size is read from). A
 * place is never given back.
 */
export class TreeSlots {
  constructor(
    readonly sql: TableSql,
    readonly flags: Flags,
  ) {}

  /** How many sessions below the root's children took a place in its tree. */
  count(): number {
    return Number(this.flags.get("tree-slots") ?? "0");
  }

  has(childId: string): boolean {
    if (!this.sql.exists()) return false; // not created yet: empty
    return this.sql.exec("SELECT 1 FROM tree_slots WHERE child_id = ?", childId).toArray().length > 0;
  }

  /** Inside a transaction: `childId` takes a place (the caller checked it has none yet). */
  take(childId: string): void {
    const slots = this.count();
    this.sql.exec("INSERT INTO tree_slots (child_id) VALUES (?)", childId);
    this.flags.set("tree-slots", String(slots + 1));
  }
}
