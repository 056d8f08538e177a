import type { HostSql, SqlValue } from "../host/port";
import { FIRST_USE_DDL, TABLES_ON_FIRST_USE, type TableOnFirstUse } from "./schema";

/**
 * The SQL of one table created on first use, as its store sees it: `exec` runs a statement (the
 * first one creates the table), `exists` says whether the table is there yet, so a read that
 * would find it empty can answer so without creating it.
 */
export interface TableSql {
  exec: HostSql["exec"];
  exists(): boolean;
}

/**
 * The tables of one session that are created when first used (schema.ts: TABLES_ON_FIRST_USE).
 * Each store of such a table gets its SQL through `sql(table)`: the first statement it runs on
 * this instance creates the table and its indexes (in their latest form, `IF NOT EXISTS`) when
 * the object does not have them yet, inside the caller's transaction if there is one. Any
 * statement creates it, a read too (an empty table answers what the absent one would), so no
 * read can fail on a missing table; the reads a session makes without using the table (its
 * status, its listing facts, the drive loop's polls) answer empty from `exists` or their store's
 * memo instead, so the tables a session never uses are never created.
 */
export class FirstUseTables {
  readonly #sql: HostSql;
  /** The first-use tables the object is known to have. */
  readonly #present: Set<string>;
  /**
   * The tables created inside each open transaction, innermost last (a rollback of one takes
   * its tables away again; a commit hands them to the transaction around it, if any). One made
   * outside every transaction stays: it commits with the object's own implicit write batch.
   */
  readonly #createdIn: Set<string>[] = [];

  /** `present`: the object's table names as it opened (none for a brand-new object). */
  constructor(sql: HostSql, present: Iterable<string>) {
    this.#sql = sql;
    const onFirstUse = new Set<string>(TABLES_ON_FIRST_USE);
    this.#present = new Set([...present].filter((name) => onFirstUse.has(name)));
  }

  /** The SQL of `table`'s store: the same statements, with the table made before the first. */
  sql(table: TableOnFirstUse): TableSql {
    return {
      exec: <T extends Record<string, SqlValue>>(query: string, ...bindings: unknown[]) => {
        this.#ensure(table);
        return this.#sql.exec<T>(query, ...bindings);
      },
      exists: () => this.has(table),
    };
  }

  /**
   * Whether the object has `table` (never creates it). Every write of the product goes through
   * the stores, so this instance knows: its tables as the object opened, and those it created.
   */
  has(table: TableOnFirstUse): boolean {
    return this.#present.has(table);
  }

  /** A transaction begins (SessionStores.transact). */
  began(): void {
    this.#createdIn.push(new Set());
  }

  /** The innermost transaction committed: the tables it created stay (with the one around it). */
  committed(): void {
    const created = this.#createdIn.pop();
    const outer = this.#createdIn.at(-1);
    if (created && outer) for (const table of created) outer.add(table);
  }

  /** The innermost transaction rolled back: a table it created is gone, so its next use makes it again. */
  rolledBack(): void {
    for (const table of this.#createdIn.pop() ?? []) this.#present.delete(table);
  }

  #ensure(table: TableOnFirstUse): void {
    if (this.#present.has(table)) return;
    this.#sql.exec(FIRST_USE_DDL[table]);
    this.#present.add(table);
    this.#createdIn.at(-1)?.add(table);
  }
}
