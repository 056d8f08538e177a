import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CHILD_WATCH_MS } from "../../../durable-objects/delegation/child-watch";
import { LOST_ALARM_MS } from "../../../durable-objects/kernel/drive-loop";
import { api, createSession, startChild } from "../../support/api";
import {
  clock,
  driveToSettlement,
  expectExactlyOnce,
  faults,
  removeAllFaults,
  startWithFaults,
} from "../../support/faults";
import { allEvents, assistantTexts, eventually, ofType } from "../../support/logs";
import { alarmOf, outboxOf, stub } from "../../support/objects";

/**
 * An alarm the platform never fires (a lost alarm) leaves owed work without a wake-up. Three
 * repairs cover it: a child working for a parent is asked by the parent's watchdog (its alarm
 * comes round while children work, `child-watch.ts`); any session is checked when a request
 * touches it; and every object checks when it boots. Each test loses an alarm on purpose (deletes
 * it, or leaves it far past its time) while work is owed, then shows the work done exactly once.
 * The clock is frozen (test/support/faults.ts), so no alarm fires unless the test runs it.
 */

beforeEach(() => clock.freeze());
afterEach(() => {
  removeAllFaults();
  clock.release();
});

function loseAlarm(id: string, at: number | null = null): Promise<void> {
  return runInDurableObject(stub(id), async (_instance: unknown, state: DurableObjectState) => {
    if (at === null) await state.storage.deleteAlarm();
    else await state.storage.setAlarm(at);
  });
}

const waitFor = (what: string, check: () => Promise<boolean>) =>
  eventually(check, Boolean, { what, timeoutMs: 5_000, intervalMs: 10 });

describe("a lost alarm", () => {
  it("of a child that owes its result is repaired by the parent's watchdog, and the result arrives once", async () => {
    // the child's first send of its result fails: the retry waits on the child's alarm, which is lost
    const s = await startWithFaults("lost child alarm", {
      child: () => (point, n) => (point === "before-send" && n === 1 ? "throw" : undefined),
    });
    expect(s.status).toBe(201);
    await s.childFaults.reached("before-send");
    await waitFor(
      "the failed send to be recorded",
      async () => (await outboxOf(s.childId))[0]?.attempts === 1,
    );
    await loseAlarm(s.childId);
    expect(await alarmOf(s.childId)).toBeNull();

    // the parent's alarm is its watchdog's: due a minute after it last looked
    const parentAlarm = await alarmOf(s.parentId);
    expect(parentAlarm).not.toBeNull();
    expect(parentAlarm! - Date.now()).toBeGreaterThan(CHILD_WATCH_MS - 5_000);
    expect(parentAlarm! - Date.now()).toBeLessThanOrEqual(CHILD_WATCH_MS);

    clock.advance(CHILD_WATCH_MS + 1_000);
    await runDurableObjectAlarm(stub(s.parentId));
    expect(await alarmOf(s.childId)).not.toBeNull(); // the watchdog asked, the child re-armed

    await driveToSettlement(s.parentId, s.childId, s.runId);
    await expectExactlyOnce({ ...s, runId: await s.runId() });
    expect(s.childFaults.count("before-model")).toBe(1); // the child's work was not redone
    // nothing is working for the parent any more: its watchdog stops with its alarm
    expect(await alarmOf(s.parentId)).toBeNull();
  });

  it("of a continuable child whose turn ended but whose epoch did not settle yet is repaired by the watchdog", async () => {
    // the pass dies right after the turn's last append: the epoch's settlement (the parent's
    // notice) is owed, and the safety-net alarm that would run it is lost
    const parent = await createSession();
    const { childId } = await startChild(parent.id, {
      prompt: JSON.stringify({ script: [{ think: 300 }, { say: "settled" }] }),
    });
    const plan = faults(childId, (point, n) => (point === "after-append" && n === 1 ? "throw" : undefined));
    await plan.reached("after-append");
    await waitFor("the turn to end", async () => ofType(await allEvents(childId), "turn/end").length === 1);
    await loseAlarm(childId);

    clock.advance(CHILD_WATCH_MS + 1_000);
    await runDurableObjectAlarm(stub(parent.id));
    expect(await alarmOf(childId)).not.toBeNull(); // the settlement counts as owed work
    await runDurableObjectAlarm(stub(childId));
    await waitFor("the parent's notice", async () =>
      ofType(await allEvents(parent.id), "subagent/end").some((e) => e.data.id === childId),
    );
    const ends = ofType(await allEvents(parent.id), "subagent/end").filter((e) => e.data.id === childId);
    expect(ends.map((e) => e.data.stopReason)).toEqual(["completed"]);
    expect(plan.count("after-model")).toBe(1); // the turn was not run again
  });

  it("of a session owing a model step is repaired by the next request that touches it", async () => {
    const session = await createSession();
    // the first drive pass dies before its step (its safety-net alarm is armed), and that alarm is lost
    const plan = faults(session.id, (point, n) =>
      point === "before-drive" && n === 1 ? "throw" : undefined,
    );
    const sent = await api("POST", `/v1/sessions/${session.id}/messages`, {
      body: { content: "hello there" },
    });
    expect(sent.status).toBe(202);
    await plan.reached("before-drive");
    await loseAlarm(session.id);

    clock.advance(11_000); // past the touch check's interval
    const read = await api("GET", `/v1/sessions/${session.id}`);
    expect(read.status).toBe(200);
    await waitFor("the touch to re-arm the alarm", async () => (await alarmOf(session.id)) !== null);

    await runDurableObjectAlarm(stub(session.id));
    await waitFor("the answer", async () => assistantTexts(await allEvents(session.id)).length > 0);
    expect(assistantTexts(await allEvents(session.id))).toEqual(["echo: hello there"]);
    expect(plan.count("before-model")).toBe(1);
  });

  it("still recorded but long past its time counts as lost; one merely due is left alone", async () => {
    const session = await createSession();
    const plan = faults(session.id, (point, n) =>
      point === "before-drive" && n === 1 ? "throw" : undefined,
    );
    await api("POST", `/v1/sessions/${session.id}/messages`, { body: { content: "late" } });
    await plan.reached("before-drive");

    // overdue, but not by enough to be lost: a touch leaves it as it is
    const due = Date.now() - LOST_ALARM_MS / 2;
    await loseAlarm(session.id, due);
    clock.advance(11_000);
    await api("GET", `/v1/sessions/${session.id}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await alarmOf(session.id)).toBe(due);

    // far past its time: the next touch arms a new one
    await loseAlarm(session.id, Date.now() - LOST_ALARM_MS - 1_000);
    clock.advance(11_000);
    await api("GET", `/v1/sessions/${session.id}`);
    await waitFor("a fresh alarm", async () => {
      const alarm = await alarmOf(session.id);
      return alarm !== null && alarm >= Date.now();
    });
    await runDurableObjectAlarm(stub(session.id));
    await waitFor("the answer", async () => assistantTexts(await allEvents(session.id)).length > 0);
    expect(assistantTexts(await allEvents(session.id))).toEqual(["echo: late"]);
  });
});
