import { lazy } from "../../src/contract/lazy";
import { SESSION_MIGRATIONS } from "./session-migrations";

/**
 * The schema texts folded out of a session's migrations (session-migrations.ts), each made on
 * first use: the latest schema of a brand-new object, the schema a new session is born with
 * (every table but those created on first use), and each first-use table's own DDL; and the
 * statement helpers the migration runner (schema.ts) reads steps with.
 */

/**
 * The latest schema for an object that has none yet: every migration in one batch, with each
 * `ALTER TABLE t ADD COLUMN c` folded into `t`'s `CREATE TABLE`. An `ALTER TABLE` makes SQLite
 * rewrite and re-read the whole schema, which a brand-new child would pay on its creation path for
 * columns it could have been created with (a test checks that both paths give the same tables,
 * columns and indexes).
 */
export const freshSchema = once(() => foldAlters(SESSION_MIGRATIONS.join("\n")));

/**
 * Tables a session creates when it first uses them, not when it is born. A one-shot child that
 * answers and never delegates needs its header, log, inbox, loop state and outbox; the other
 * tables and their indexes were most of what a brand-new child's schema cost it (the profile's
 * `schema.ts` share, bench/README.md). Each is created, with its indexes, in its latest form, by
 * the first statement its store runs (first-use-tables.ts); until then its store's memo or an
 * `exists` check answers the reads that would find it empty.
 *
 * The rule for later migrations: a step that creates or alters one of these tables is skipped on
 * an object that does not have the table (its first use creates it in the form the step gives),
 * so a step never needs to ask whether the table is there.
 */
export const TABLES_ON_FIRST_USE = [
  "runs",
  "children",
  "seen",
  "links",
  "activation",
  "epochs",
  "flags",
  "remote_runs",
  "acp_runs",
  "continuable_starts",
  "tree_slots",
  "cancelled_runs",
  "approvals",
  "schedules",
  "budget_draws",
  "budget_reservations",
] as const;
export type TableOnFirstUse = (typeof TABLES_ON_FIRST_USE)[number];

/** The table a DDL statement creates, alters or indexes (undefined: not such a statement). */
export function tableOf(statement: string): string | undefined {
  return /^\s*(?:CREATE TABLE(?: IF NOT EXISTS)?|ALTER TABLE|CREATE (?:UNIQUE )?INDEX(?: IF NOT EXISTS)? \w+ ON) (\w+)/.exec(
    statement,
  )?.[1];
}

/** The statements of a DDL text, trimmed, without empty ones. */
export function statementsOf(ddl: string): string[] {
  return ddl
    .split(";")
    .map((statement) => statement.trim())
    .filter((statement) => statement.length > 0);
}

/** Whether `table` is created on first use (TABLES_ON_FIRST_USE). */
export const onFirstUse = (table: string | undefined): boolean =>
  (TABLES_ON_FIRST_USE as readonly (string | undefined)[]).includes(table);

/** What a brand-new session is born with: the latest schema of every table not created on first use. */
export const birthSchema = once(
  () =>
    `${statementsOf(freshSchema())
      .filter((statement) => !onFirstUse(tableOf(statement)))
      .join(";\n")};`,
);

/** The table that holds the schema version (`schema_version`). */
export const META_TABLE =
  "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT";

/** A brand-new session object's whole schema, with its version, as one batch (one statement call). */
export const newSessionSchema = once(
  () => `${META_TABLE};
${birthSchema()}
INSERT INTO meta (key, value) VALUES ('schema_version', '${SESSION_MIGRATIONS.length}');`,
);

/** Each first-use table's latest `CREATE TABLE` and indexes, written to run once on any object. */
export const FIRST_USE_DDL: Readonly<Record<TableOnFirstUse, string>> = lazy(
  () =>
    Object.fromEntries(
      TABLES_ON_FIRST_USE.map((table) => [
        table,
        `${statementsOf(freshSchema())
          .filter((statement) => tableOf(statement) === table)
          .map((statement) =>
            statement
              .replace(/^CREATE TABLE /, "CREATE TABLE IF NOT EXISTS ")
              .replace(/^CREATE (UNIQUE )?INDEX /, "CREATE $1INDEX IF NOT EXISTS "),
          )
          .join(";\n")};`,
      ]),
    ) as Record<TableOnFirstUse, string>,
);

/** `make`'s value, made on the first call (the schema texts are folded when first needed, not at load). */
function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => {
    made ??= { value: make() };
    return made.value;
  };
}

/** `ddl` with each `ALTER TABLE t ADD COLUMN c` folded into `t`'s `CREATE TABLE`. */
function foldAlters(ddl: string): string {
  let folded = ddl;
  for (const alter of ddl.matchAll(/ALTER TABLE (\w+) ADD COLUMN ([^;]+);/g)) {
    const [statement, table, column] = alter;
    if (table === undefined || column === undefined) continue;
    folded = folded.replace(statement, "");
    const create = folded.indexOf(`CREATE TABLE ${table} (`);
    const end = folded.indexOf(") STRICT;", create);
    if (create < 0 || end < 0) throw new Error(`migration adds a column to unknown table ${table}`);
    folded = `${folded.slice(0, end).trimEnd()},\n     ${column.trim()}\n   ${folded.slice(end)}`;
  }
  return folded;
}
