import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { EventLog } from "../../../durable-objects/store/event-log";
import { migrate, TABLES_ON_FIRST_USE, tablesIn } from "../../../durable-objects/store/schema";
import { SessionStores } from "../../../durable-objects/store/session-stores";
import { createSession, startOneShot, waitForRun } from "../../support/api";
import { evict, quiesce, stub } from "../../support/objects";

/** The tables created on first use that a session's object has. */
function firstUseTablesOf(id: string): Promise<string[]> {
  return runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) => {
    const present = tablesIn(state.storage.sql);
    return TABLES_ON_FIRST_USE.filter((table) => present.has(table));
  });
}

describe("tables created on first use", () => {
  it("a one-shot child that answers never creates them; its parent creates what its starts use", async () => {
    const parent = await createSession();
    expect(await firstUseTablesOf(parent.id)).toEqual([]);
    const run = await startOneShot(parent.id, { prompt: "hi" });
    const settled = await waitForRun(parent.id, run.runId);
    expect(settled.result.output).toEqual([{ type: "text", text: "echo: hi" }]);
    await quiesce([parent.id, run.id]);
    // the child's result went out through its outbox; it has no runs, children, links or flags
    expect(await firstUseTablesOf(run.id)).toEqual([]);
    // the parent recorded the run and owns the child; the result came in on a link, once
    expect(await firstUseTablesOf(parent.id)).toEqual(["runs", "children", "seen", "links"]);
    // after a restart the parent reads them as it left them: a second start of the same session works
    await evict(parent.id);
    const again = await startOneShot(parent.id, { prompt: "again" });
    expect((await waitForRun(parent.id, again.runId)).result.output).toEqual([
      { type: "text", text: "echo: again" },
    ]);
  });

  it("a table created inside a transaction that rolls back is gone, and its next use creates it again", async () => {
    await runInDurableObject(stub(crypto.randomUUID()), (_instance: unknown, state: DurableObjectState) => {
      const created = migrate(state.storage);
      const log = new EventLog(state.storage.sql);
      const stores = new SessionStores(state.storage, log, () => {}, { created });
      expect(() =>
        stores.transact(() => {
          stores.flags.set("draining", "1");
          throw new Error("rolled back");
        }),
      ).toThrow("rolled back");
      expect(tablesIn(state.storage.sql).has("flags")).toBe(false);
      expect(stores.tables.has("flags")).toBe(false);
      expect(stores.flags.get("draining")).toBeUndefined(); // a read creates the table, empty
      stores.transact(() => stores.flags.set("draining", "1"));
      expect(tablesIn(state.storage.sql).has("flags")).toBe(true);
      // a new instance over the same storage (a restart) knows the table is there and reads it
      const reopened = new SessionStores(state.storage, new EventLog(state.storage.sql), () => {}, {
        tables: tablesIn(state.storage.sql),
      });
      expect(reopened.tables.has("flags")).toBe(true);
      expect(reopened.flags.get("draining")).toBe("1");
    });
  });

  it("a table created outside any transaction stays known through a later rollback; one created in a nested transaction goes with the outer one", async () => {
    await runInDurableObject(stub(crypto.randomUUID()), (_instance: unknown, state: DurableObjectState) => {
      const created = migrate(state.storage);
      const stores = new SessionStores(state.storage, new EventLog(state.storage.sql), () => {}, { created });
      stores.flags.set("draining", "1"); // no transaction: kept with the object's own write batch
      expect(() =>
        stores.transact(() => {
          stores.children.own("c1", "spawn", "one-shot", undefined, 1);
          throw new Error("rolled back");
        }),
      ).toThrow("rolled back");
      expect(stores.tables.has("flags")).toBe(true);
      expect(stores.flags.get("draining")).toBe("1");
      expect(stores.tables.has("children")).toBe(false);
      expect(stores.children.count()).toBe(0);
      expect(() =>
        stores.transact(() => {
          stores.transact(() => stores.children.own("c2", "spawn", "one-shot", undefined, 2));
          throw new Error("outer rolled back");
        }),
      ).toThrow("outer rolled back");
      expect(tablesIn(state.storage.sql).has("children")).toBe(false);
      expect(stores.tables.has("children")).toBe(false);
      stores.transact(() => stores.children.own("c3", "spawn", "one-shot", undefined, 3));
      expect(stores.children.all().map((c) => c.childId)).toEqual(["c3"]);
    });
  });
});
