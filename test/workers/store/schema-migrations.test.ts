import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  birthSchema,
  FIRST_USE_DDL,
  freshSchema,
  migrate,
  SCHEMA_VERSION,
  SESSION_MIGRATIONS,
  schemaVersion,
  TABLES_ON_FIRST_USE,
  tablesIn,
} from "../../../durable-objects/store/schema";
import { stub } from "../../support/objects";

function tables(sql: SqlStorage): string[] {
  return sql
    .exec<{ name: string; sql: string }>(
      "SELECT name, sql FROM sqlite_master WHERE name NOT LIKE '_cf_%' ORDER BY name",
    )
    .toArray()
    .map((r) => `${r.name}: ${r.sql}`);
}

/** What every first use would create: each table created on first use that the object lacks. */
function useEveryTable(sql: SqlStorage): void {
  for (const table of TABLES_ON_FIRST_USE) sql.exec(FIRST_USE_DDL[table]);
}

/** The tables created on first use that the object has. */
function firstUseTables(sql: SqlStorage): string[] {
  const present = tablesIn(sql);
  return TABLES_ON_FIRST_USE.filter((table) => present.has(table));
}

/** Every table's columns (name, type, not null, default, key) and every index, as SQLite reports them. */
function shape(sql: SqlStorage): unknown {
  const names = sql
    .exec<{ name: string; type: string }>(
      "SELECT name, type FROM sqlite_master WHERE name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .toArray();
  return names.map(({ name, type }) =>
    type === "table"
      ? {
          name,
          columns: sql
            .exec('SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)', name)
            .toArray(),
        }
      : { name, index: sql.exec("SELECT name FROM pragma_index_info(?)", name).toArray() },
  );
}

describe("session schema migrations", () => {
  it("creates a new object's schema in one batch, with exactly the tables, columns and indexes of every step applied", async () => {
    const [fresh, stepwise] = await Promise.all(
      ([false, true] as const).map((steps) =>
        runInDurableObject(stub(crypto.randomUUID()), (_instance: unknown, state: DurableObjectState) => {
          migrate(state.storage, SESSION_MIGRATIONS, { stepwise: steps });
          expect(schemaVersion(state.storage.sql)).toBe(SCHEMA_VERSION);
          const born = firstUseTables(state.storage.sql);
          useEveryTable(state.storage.sql);
          return { born, shape: shape(state.storage.sql) };
        }),
      ),
    ).then(([a, b]) => [a!, b!] as const);
    // born without the tables created on first use; once each is used, the same as every step
    expect(fresh.born).toEqual([]);
    expect(stepwise.born).toEqual([...TABLES_ON_FIRST_USE]);
    expect(fresh.shape).toEqual(stepwise.shape);
    expect(JSON.stringify(fresh.shape)).toContain("held_until"); // a folded column is there
    expect(freshSchema()).not.toMatch(/ALTER TABLE/);
    for (const table of ["header", "events", "inbox", "loop", "outbox"])
      expect(birthSchema()).toContain(`CREATE TABLE ${table} (`);
    for (const table of TABLES_ON_FIRST_USE) expect(birthSchema()).not.toMatch(new RegExp(`\\b${table}\\b`));
  });

  it("upgrades from every older version to the latest, keeping the rows already there", async () => {
    const latest = await runInDurableObject(
      stub(crypto.randomUUID()),
      (_instance: unknown, state: DurableObjectState) => {
        migrate(state.storage);
        useEveryTable(state.storage.sql);
        return shape(state.storage.sql);
      },
    );
    for (let from = 1; from < SCHEMA_VERSION; from++) {
      const upgraded = await runInDurableObject(
        stub(crypto.randomUUID()),
        (_instance: unknown, state: DurableObjectState) => {
          const { sql } = state.storage;
          migrate(state.storage, SESSION_MIGRATIONS.slice(0, from));
          expect(schemaVersion(sql)).toBe(from);
          sql.exec("INSERT INTO events (seq, type, at, data) VALUES (0, 'turn/start', 1, '{\"turn\":1}')");
          migrate(state.storage);
          expect(schemaVersion(sql)).toBe(SCHEMA_VERSION);
          expect(sql.exec("SELECT type FROM events").toArray()).toEqual([{ type: "turn/start" }]);
          // the tables the older object had were migrated; those it lacked come at first use
          useEveryTable(sql);
          return shape(sql);
        },
      );
      expect(upgraded).toEqual(latest);
    }
  });

  it("leaves nothing half-applied when a step fails: the version and the tables stay as they were", async () => {
    await runInDurableObject(stub(crypto.randomUUID()), (_instance: unknown, state: DurableObjectState) => {
      const { sql } = state.storage;
      migrate(state.storage, SESSION_MIGRATIONS.slice(0, 1));
      const before = tables(sql);
      expect(() =>
        migrate(state.storage, [...SESSION_MIGRATIONS.slice(0, 2), "CREATE TABLE broken ("]),
      ).toThrow();
      expect(schemaVersion(sql)).toBe(1);
      expect(tables(sql)).toEqual(before);
      migrate(state.storage); // the next attempt applies everything
      expect(schemaVersion(sql)).toBe(SCHEMA_VERSION);
    });
  });

  it("skips a later step's change to a table created on first use where the object does not have it yet", async () => {
    const later = [
      ...SESSION_MIGRATIONS,
      "ALTER TABLE runs ADD COLUMN extra TEXT; CREATE INDEX runs_extra ON runs (extra);",
    ];
    const columns = await Promise.all(
      [false, true].map((used) =>
        runInDurableObject(stub(crypto.randomUUID()), (_instance: unknown, state: DurableObjectState) => {
          const { sql } = state.storage;
          migrate(state.storage);
          if (used) sql.exec(FIRST_USE_DDL.runs);
          migrate(state.storage, later, { firstUse: true });
          expect(schemaVersion(sql)).toBe(later.length);
          if (!tablesIn(sql).has("runs")) return null;
          return sql
            .exec<{ name: string }>("SELECT name FROM pragma_table_info('runs')")
            .toArray()
            .map((r) => r.name);
        }),
      ),
    );
    expect(columns[0]).toBeNull(); // never used: still not there, and the step did not fail
    expect(columns[1]).toContain("extra"); // used: the step applied to it
  });

  it("answers the drive loop's polls of a parent with a long history from indexes, not a scan of every run", async () => {
    const plans = await runInDurableObject(
      stub(crypto.randomUUID()),
      (_instance: unknown, state: DurableObjectState) => {
        migrate(state.storage);
        useEveryTable(state.storage.sql);
        const plan = (query: string): string =>
          state.storage.sql
            .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`)
            .toArray()
            .map((r) => r.detail)
            .join("; ");
        return [
          plan("SELECT min(held_until) AS at FROM runs WHERE held_until IS NOT NULL"),
          plan("SELECT * FROM runs WHERE held_until IS NOT NULL AND held_until <= 5"),
          plan("SELECT count(*) AS n FROM runs WHERE local = 0"),
          plan("SELECT * FROM runs WHERE state = 'running' AND local = 0"),
          plan("SELECT run_id FROM runs WHERE state = 'starting' AND held_until IS NULL"),
          plan("SELECT count(*) FROM outbox WHERE target = 'x'"),
        ];
      },
    );
    for (const detail of plans) {
      expect(detail).toMatch(/USING (COVERING )?INDEX/);
      expect(detail).not.toMatch(/SCAN (runs|outbox)$/);
    }
  });
});
