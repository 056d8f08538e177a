import { Activation } from "../store/activation";
import { CancelledRuns } from "../store/cancelled-runs";
import { ContinuableStarts } from "../store/continuable-starts";
import type { TableSql } from "../store/first-use-tables";
import { type TableOnFirstUse, tablesIn } from "../store/schema";
import type { SessionStores } from "../store/session-stores";
import { TreeSlots } from "../store/tree-slots";

/**
 * The stores of delegation tables that store/session-stores.ts does not hold as fields yet, one
 * set per session's stores (built on first use, over the same first-use tables). Once
 * session-stores.ts holds them, their users read them there and this file goes.
 */
export interface DelegationStores {
  /** A continuable child's current epoch (store/activation.ts). */
  activation: Activation;
  /** What makes a continuable start idempotent (store/continuable-starts.ts). */
  continuableStarts: ContinuableStarts;
  /** At a tree's root: the places sessions below its children took (store/tree-slots.ts). */
  treeSlots: TreeSlots;
  /** Cancels that outran their one-shot child's creation (store/cancelled-runs.ts). */
  cancelledRuns: CancelledRuns;
}

const built = new WeakMap<SessionStores, DelegationStores>();

export function delegationStores(stores: SessionStores): DelegationStores {
  let found = built.get(stores);
  if (!found) {
    found = {
      activation: new Activation(stores.tables.sql("activation")),
      continuableStarts: new ContinuableStarts(movedInto(stores, "continuable_starts")),
      treeSlots: new TreeSlots(movedInto(stores, "tree_slots"), stores.flags),
      cancelledRuns: new CancelledRuns(movedInto(stores, "cancelled_runs")),
    };
    built.set(stores, found);
  }
  return found;
}

/**
 * The SQL of a table that migration 14 may have created while the object opened, moving an older
 * object's rows out of `flags` into it (schema.ts, FLAG_MOVES): the session's first-use tables
 * were listed before the migration ran, so where they say the table is absent and the object has
 * `flags`, the object itself is asked, once per instance.
 */
function movedInto(stores: SessionStores, table: TableOnFirstUse): TableSql {
  const sql = stores.tables.sql(table);
  let migrated: boolean | undefined;
  return {
    exec: sql.exec,
    exists: () => {
      if (sql.exists()) return true;
      migrated ??= stores.tables.has("flags") && tablesIn(stores.sql).has(table);
      return migrated;
    },
  };
}
