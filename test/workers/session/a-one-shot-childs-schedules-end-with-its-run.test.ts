import { runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { api, expectError, createSession, startOneShot, waitForRun } from "../../support/api";
import { clock } from "../../support/faults";
import { allEvents, count, ofType, quiet, toolResults } from "../../support/logs";
import { alarmOf, sqlRows, stub } from "../../support/objects";
import { script, toolCall } from "../../support/scripts";

const MINUTE = 60_000;

// The frozen clock (test/support/faults.ts): an alarm fires only when a test runs it.
afterEach(() => clock.release());

/** Runs the session's alarm (as the platform would at its time) and waits until its work is done. */
async function fireAlarm(id: string): Promise<void> {
  await runDurableObjectAlarm(stub(id));
  await quiet(id);
}

/** A one-shot child allowed `schedule_message` by name whose only call is `args`; its run settled. */
async function settledChildThatScheduled(
  args: Record<string, unknown>,
): Promise<{ parent: string; child: string }> {
  const { id: parent } = await createSession();
  const run = await startOneShot(parent, {
    prompt: script({ call: [toolCall("schedule_message", args)] }, { say: "scheduled" }),
    toolFilter: { allow: ["schedule_message"] },
  });
  const settled = await waitForRun(parent, run.runId);
  expect(settled.result.stopReason).toBe("completed");
  await quiet(run.id);
  const [scheduled] = toolResults(await allEvents(run.id));
  expect(scheduled).toMatchObject({ name: "schedule_message", isError: false });
  return { parent, child: run.id };
}

describe("a one-shot child's schedules end with its run (README 'Schedules')", () => {
  it("a child whose only call schedules `* * * * *` runs no turn after its run settled, for thirteen minutes of the clock", async () => {
    clock.set(Date.parse("2030-01-15T12:00:10Z"));
    const { child } = await settledChildThatScheduled({ message: "tick", cron: "* * * * *" });
    for (let minute = 1; minute <= 13; minute++) {
      clock.set(Date.parse("2030-01-15T12:00:02Z") + minute * MINUTE);
      await fireAlarm(child);
    }
    const events = await allEvents(child);
    expect(count(events, "turn/start")).toBe(1);
    expect(count(events, "turn/end")).toBe(1);
    expect(
      ofType(events, "user/message").filter((e) => (e.data.source as { kind: string }).kind === "schedule"),
    ).toEqual([]);
    expect(ofType(events, "schedule/deleted").map((e) => e.data.reason)).toEqual(["its one-shot run ended"]);
    expect((await api("GET", `/v1/sessions/${child}/schedules`)).body).toEqual({ schedules: [] });
    expect(await sqlRows(child, "SELECT count(*) AS n FROM schedules")).toEqual([{ n: 0 }]);
    expect(await alarmOf(child)).toBeNull();
  });

  it("a message it held for later (delay_seconds) never arrives", async () => {
    clock.set(Date.parse("2030-01-15T12:00:00Z"));
    const { child } = await settledChildThatScheduled({ message: "wake up", delay_seconds: 90 });
    clock.set(Date.parse("2030-01-15T12:01:31Z"));
    await fireAlarm(child);
    const events = await allEvents(child);
    expect(count(events, "turn/end")).toBe(1);
    expect(count(events, "agent/inbox/inserted")).toBe(1); // its prompt, nothing after
    expect((await api("GET", `/v1/sessions/${child}/schedules`)).body).toEqual({ schedules: [] });
  });

  it("once its run ended it takes no new schedule and no message for later: 422 NOT_RESUMABLE, nothing stored", async () => {
    clock.set(Date.parse("2030-01-15T12:00:00Z"));
    const { child } = await settledChildThatScheduled({ message: "tick", cron: "0 * * * *" });
    const before = await allEvents(child);
    expectError(
      await api("POST", `/v1/sessions/${child}/schedules`, { body: { cron: "* * * * *", content: "again" } }),
      422,
      "NOT_RESUMABLE",
      /run has ended/,
    );
    expectError(
      await api("POST", `/v1/sessions/${child}/messages`, {
        body: { content: "later", notBefore: Date.parse("2030-01-15T13:00:00Z") },
      }),
      422,
      "NOT_RESUMABLE",
    );
    expect(await allEvents(child)).toHaveLength(before.length);
    expect(await sqlRows(child, "SELECT count(*) AS n FROM schedules")).toEqual([{ n: 0 }]);
  });
});
