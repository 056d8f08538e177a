import type { HostSql, HostStorage } from "../host/port";
import {
  FIRST_USE_DDL,
  META_TABLE,
  newSessionSchema,
  onFirstUse,
  statementsOf,
  type TableOnFirstUse,
  tableOf,
} from "./schema-texts";
import { SESSION_MIGRATIONS } from "./session-migrations";

/**
 * Brings a session's SQLite database (or another object's, with its own migrations) to the latest
 * schema, run synchronously and gated by a version row in `meta` (Durable Objects have no
 * `PRAGMA user_version`); a step may also move rows out of `flags` into a table it adds
 * (FLAG_MOVES). The pending steps run in one transaction with the version bump, so a crash never
 * leaves a half-migrated schema. The steps are session-migrations.ts; the texts folded out of
 * them (a new session's schema, the first-use tables' DDL) are schema-texts.ts, re-exported here.
 */

export {
  birthSchema,
  FIRST_USE_DDL,
  freshSchema,
  TABLES_ON_FIRST_USE,
  type TableOnFirstUse,
} from "./schema-texts";
export { SCHEMA_VERSION, SESSION_MIGRATIONS } from "./session-migrations";

/**
 * Rows a step moves out of `flags` (named `<prefix><key>`) into a table of their own, right after
 * the step's statements, so an object written by older code keeps its answers: `insert` fills
 * `into` from `flags`, then the flags of every prefix are deleted. A move runs only where `flags`
 * holds a row of one of its prefixes, and creates `into` first (in its latest form) where the
 * object does not have it yet; elsewhere it changes nothing, so no table is made for nothing.
 */
interface FlagMove {
  prefixes: readonly string[];
  into: TableOnFirstUse;
  insert: string;
}

/** The moves of each session step, by the step's number (its version). */
const FLAG_MOVES: Readonly<Record<number, readonly FlagMove[]>> = {
  14: [
    {
      prefixes: ["call:", "call-message:", "start-key:"],
      into: "continuable_starts",
      // `call:<callKey>` = child id, `call-message:<callKey>` = its message id, and
      // `start-key:<childId>` = "<request key> <first run id>"
      insert: `INSERT INTO continuable_starts (child_id, call_key, message_id)
         SELECT f.value, substr(f.name, 6),
                (SELECT m.value FROM flags AS m WHERE m.name = 'call-message:' || substr(f.name, 6))
         FROM flags AS f WHERE substr(f.name, 1, 5) = 'call:'
         ON CONFLICT DO NOTHING;
       INSERT INTO continuable_starts (child_id, request_key, run_id)
         SELECT substr(name, 11),
                CASE WHEN instr(value, ' ') > 0 THEN substr(value, 1, instr(value, ' ') - 1) ELSE value END,
                CASE WHEN instr(value, ' ') > 0 THEN substr(value, instr(value, ' ') + 1) END
         FROM flags WHERE substr(name, 1, 10) = 'start-key:'
         ON CONFLICT (child_id) DO UPDATE SET request_key = excluded.request_key, run_id = excluded.run_id;`,
    },
    {
      prefixes: ["tree-slot:"],
      into: "tree_slots",
      insert: `INSERT INTO tree_slots (child_id)
         SELECT substr(name, 11) FROM flags WHERE substr(name, 1, 10) = 'tree-slot:' ON CONFLICT DO NOTHING;`,
    },
    {
      prefixes: ["cancelled:"],
      into: "cancelled_runs",
      // `cancelled:<runId>` = the parent that cancelled it
      insert: `INSERT INTO cancelled_runs (run_id, parent)
         SELECT substr(name, 11), value FROM flags WHERE substr(name, 1, 10) = 'cancelled:'
         ON CONFLICT DO NOTHING;`,
    },
  ],
};

/** Runs one of a step's moves out of `flags` (see FlagMove) over an object with `tables`. */
function moveFlags(sql: HostSql, { prefixes, into, insert }: FlagMove, tables: Set<string>): void {
  if (!tables.has("flags")) return;
  const named = prefixes.map(() => "substr(name, 1, ?) = ?").join(" OR ");
  const bindings = prefixes.flatMap((prefix) => [prefix.length, prefix]);
  if (sql.exec(`SELECT 1 FROM flags WHERE ${named} LIMIT 1`, ...bindings).toArray().length === 0) return;
  sql.exec(FIRST_USE_DDL[into]);
  tables.add(into);
  sql.exec(insert);
  sql.exec(`DELETE FROM flags WHERE ${named}`, ...bindings);
}

/** The names of this object's tables (never creates anything; empty: it was never initialized). */
export function tablesIn(sql: HostSql): Set<string> {
  return new Set(
    sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
      .toArray()
      .map((row) => row.name),
  );
}

/** Whether this object has ever been initialized (never creates anything). */
export function schemaExists(sql: HostSql): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").toArray().length > 0;
}

export function schemaVersion(sql: HostSql, exists = schemaExists(sql)): number {
  if (!exists) return 0;
  const row = sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'schema_version'").toArray()[0];
  return row ? Number(row.value) : 0;
}

/**
 * Brings the schema to the latest version; the pending steps commit with the version bump. A
 * new object gets `meta`, `birthSchema()` and its version in one batch (`stepwise` forces
 * every step of every table, for the test that compares the two). An existing session object's
 * pending steps skip the tables created on first use that it does not have (`firstUse`, the
 * default for the session's migrations: TABLES_ON_FIRST_USE); each session step's moves out of
 * `flags` run right after it (FLAG_MOVES). `exists`: whether the object has a
 * schema at all, when the caller has just asked; `tables`: its tables, when the caller has just
 * listed them (a table a move creates is added to it, so the caller need not list them again). Returns true when it created the schema: the
 * object is brand-new and every table is empty.
 */
export function migrate(
  storage: HostStorage,
  migrations: readonly string[] = SESSION_MIGRATIONS,
  {
    stepwise = false,
    exists,
    firstUse = migrations === SESSION_MIGRATIONS,
    tables,
  }: { stepwise?: boolean; exists?: boolean; firstUse?: boolean; tables?: Set<string> } = {},
): boolean {
  const { sql } = storage;
  const from = schemaVersion(sql, exists);
  if (from >= migrations.length) return false;
  const fresh = from === 0 && migrations === SESSION_MIGRATIONS && !stepwise;
  // every pending step in one transaction with the version bump: all of them or none
  storage.transactionSync(() => {
    if (fresh) {
      sql.exec(newSessionSchema());
      return;
    }
    sql.exec(META_TABLE);
    const present = firstUse && from > 0 ? (tables ?? tablesIn(sql)) : undefined;
    for (let version = from; version < migrations.length; version++) {
      if (present) {
        for (const statement of statementsOf(migrations[version]!)) {
          const table = tableOf(statement);
          if (!onFirstUse(table) || present.has(table!)) sql.exec(statement);
        }
      } else sql.exec(migrations[version]!);
      // a session step's moves (another set of migrations has none)
      if (migrations[version] === SESSION_MIGRATIONS[version])
        for (const move of FLAG_MOVES[version + 1] ?? []) moveFlags(sql, move, present ?? tablesIn(sql));
    }
    sql.exec(
      "INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      String(migrations.length),
    );
  });
  return from === 0;
}
