import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { EventLog } from "../../../durable-objects/store/event-log";
import { migrate, SESSION_MIGRATIONS, tablesIn } from "../../../durable-objects/store/schema";
import { SessionStores } from "../../../durable-objects/store/session-stores";
import { stub } from "../../support/objects";

/** The version before facts about one child or run left `flags` (schema.ts, migration 14). */
const BEFORE_MOVES = 13;

function rows(sql: SqlStorage, query: string): Record<string, SqlStorageValue>[] {
  return sql.exec(query).toArray();
}

/** What an older object wrote: named facts, and prefixed names about one child or run each. */
function writeOldFlags(sql: SqlStorage, flags: Record<string, string>): void {
  for (const [name, value] of Object.entries(flags))
    sql.exec("INSERT INTO flags (name, value) VALUES (?, ?)", name, value);
}

describe("migration 14: facts about one child or run leave flags", () => {
  it("moves an older object's prefixed flags into their tables, keeps the named facts, and its stores answer as before", async () => {
    await runInDurableObject(stub(crypto.randomUUID()), (_instance: unknown, state: DurableObjectState) => {
      const { sql } = state.storage;
      migrate(state.storage, SESSION_MIGRATIONS.slice(0, BEFORE_MOVES));
      writeOldFlags(sql, {
        "call:3:tc_1": "child-a",
        "call-message:3:tc_1": "msg_a",
        "call:4:tc_2": "child-b",
        "start-key:child-c": "key-c run_c",
        "tree-slot:deep-1": "1",
        "tree-slots": "1",
        "cancelled:run_x": "parent-p",
        draining: "self",
        epochs: "2",
        usage: '{"inputTokens":1,"outputTokens":2}',
      });
      // as the session object does: its tables are listed before the migration runs, which adds
      // the tables its moves create to that list
      const opened = tablesIn(sql);
      expect(opened.has("continuable_starts")).toBe(false);
      migrate(state.storage, undefined, { tables: opened });
      expect([...opened].filter((t) => !tablesIn(sql).has(t))).toEqual([]);
      expect([...tablesIn(sql)].filter((t) => !opened.has(t))).toEqual([]);

      expect(
        rows(
          sql,
          "SELECT child_id, call_key, message_id, request_key, run_id FROM continuable_starts ORDER BY child_id",
        ),
      ).toEqual([
        { child_id: "child-a", call_key: "3:tc_1", message_id: "msg_a", request_key: null, run_id: null },
        { child_id: "child-b", call_key: "4:tc_2", message_id: null, request_key: null, run_id: null },
        { child_id: "child-c", call_key: null, message_id: null, request_key: "key-c", run_id: "run_c" },
      ]);
      expect(rows(sql, "SELECT child_id FROM tree_slots")).toEqual([{ child_id: "deep-1" }]);
      expect(rows(sql, "SELECT run_id, parent FROM cancelled_runs")).toEqual([
        { run_id: "run_x", parent: "parent-p" },
      ]);
      expect(rows(sql, "SELECT name FROM flags ORDER BY name").map((r) => r.name)).toEqual([
        "draining",
        "epochs",
        "tree-slots",
        "usage",
      ]);

      // the stores over that list (session-object.ts)
      const stores = new SessionStores(state.storage, new EventLog(sql), () => {}, { tables: opened });
      const { continuableStarts, treeSlots, cancelledRuns } = stores;
      expect(continuableStarts.byCall("3:tc_1")).toEqual({ childId: "child-a", messageId: "msg_a" });
      expect(continuableStarts.byCall("4:tc_2")).toEqual({ childId: "child-b", messageId: undefined });
      expect(continuableStarts.requestOf("child-c")).toEqual({ requestKey: "key-c", runId: "run_c" });
      expect(continuableStarts.requestOf("child-a")).toBeUndefined();
      expect(treeSlots.has("deep-1")).toBe(true);
      expect(treeSlots.count()).toBe(1);
      expect(cancelledRuns.parentOf("run_x")).toBe("parent-p");
    });
  });

  it("creates no table for an object whose flags hold only named facts, or that has no flags", async () => {
    for (const flags of [{ usage: '{"inputTokens":1,"outputTokens":1}' }, undefined]) {
      await runInDurableObject(stub(crypto.randomUUID()), (_instance: unknown, state: DurableObjectState) => {
        const { sql } = state.storage;
        migrate(state.storage, SESSION_MIGRATIONS.slice(0, BEFORE_MOVES));
        if (flags) writeOldFlags(sql, flags);
        else sql.exec("DROP TABLE flags");
        migrate(state.storage);
        const tables = tablesIn(sql);
        for (const table of ["continuable_starts", "tree_slots", "cancelled_runs"])
          expect(tables.has(table)).toBe(false);
      });
    }
  });
});
