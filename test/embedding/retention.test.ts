import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { agents, createSession, script, testEnv, turn, waitFor } from "./support";

const DAY = 24 * 3600 * 1000;

afterEach(() => vi.useRealTimers());

function stubOf(id: string): DurableObjectStub {
  return testEnv.AGENT_SESSIONS.get(testEnv.AGENT_SESSIONS.idFromName(id));
}

/** The object's tables (sqlite's own aside) and its alarm: nothing once it is erased. */
function storageOf(id: string): Promise<{ tables: string[]; alarm: number | null }> {
  return runInDurableObject(stubOf(id), async (_instance: unknown, state: DurableObjectState) => ({
    tables: state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
      .toArray()
      .map((r) => r.name)
      .filter((name) => !name.startsWith("_cf_") && !name.startsWith("sqlite_")),
    alarm: await state.storage.getAlarm(),
  }));
}

describe("RETENTION_DAYS deletes trees with no activity for that many days (README 'Deleting sessions')", () => {
  it("a tree whose child was active keeps living; once every log of it is 30 days quiet, the whole tree is deleted and leaves the directory", async () => {
    // years ahead of the real clock: the objects' alarms fire only when the test runs them
    const base = Date.parse("2031-01-01T00:00:00Z");
    vi.setSystemTime(base);
    const root = await createSession();
    await turn(root.id, "hello");
    const child = await agents("POST", `/v1/sessions/${root.id}/subagents`, {
      body: {
        provider: "spawn",
        mode: "continuable",
        label: "sleeper",
        // a child is offered schedule_message only where its filter names it
        toolFilter: { allow: ["schedule_message"] },
        prompt: script({
          call: [{ tool: "schedule_message", args: { message: "wake", delay_seconds: 29 * 86_400 } }],
        }),
      },
    });
    expect(child.status).toBe(202);
    const childId: string = child.body.childId;
    await waitFor(childId, (log) => log.some((e) => e.type === "turn/end"));

    // day 29: the child's scheduled message runs a turn (the root sees nothing of it)
    vi.setSystemTime(base + 29 * DAY + 1_000);
    await runDurableObjectAlarm(stubOf(childId));
    await waitFor(childId, (log) => log.filter((e) => e.type === "turn/end").length === 2);

    // day 31: the root's own log is 31 days quiet, its child's only 2: nothing is deleted
    vi.setSystemTime(base + 31 * DAY);
    expect(await runDurableObjectAlarm(stubOf(root.id))).toBe(true);
    expect((await agents("GET", `/v1/sessions/${root.id}`)).status).toBe(200);
    expect((await storageOf(root.id)).alarm).toBeGreaterThanOrEqual(base + 59 * DAY);

    // day 60: every log of the tree is 30 days quiet: the tree goes as a DELETE would take it
    vi.setSystemTime(base + 60 * DAY);
    await runDurableObjectAlarm(stubOf(root.id));
    expect((await agents("GET", `/v1/sessions/${root.id}`)).status).toBe(404);
    expect((await agents("GET", `/v1/sessions/${childId}`)).status).toBe(404);
    for (const id of [root.id, childId]) {
      await vi.waitFor(
        async () => {
          const storage = await storageOf(id);
          if (storage.tables.length > 0 || storage.alarm !== null) {
            await runDurableObjectAlarm(stubOf(id)); // the frozen clock: the test runs its alarm
            throw new Error(`${id} still holds ${storage.tables.join(", ")}`);
          }
        },
        { timeout: 15_000, interval: 100 },
      );
    }
    const directory = await agents("GET", "/v1/sessions?limit=200");
    expect(directory.body.sessions.map((s: { id: string }) => s.id)).not.toContain(root.id);
  });
});
