import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createSession, sendMessage } from "../../support/api";
import { deferred, faults, never } from "../../support/faults";
import {
  allEvents,
  assistantTexts,
  count,
  ofType,
  sleep,
  turnReasons,
  turnsOf,
  waitForEvents,
  waitForTurnEnds,
  type WireEvent,
} from "../../support/logs";
import { alarmOf, stub, tablesHash } from "../../support/objects";
import { script } from "../../support/scripts";

/** A message was answered exactly once: one claim, one user message, one turn, one answer. */
function expectAnsweredOnce(events: readonly WireEvent[], messageId: string, answer: string): void {
  expect(ofType(events, "agent/inbox/claimed").map((e) => e.data.messageId)).toEqual([messageId]);
  expect(ofType(events, "user/message").map((e) => e.data.messageId)).toEqual([messageId]);
  expect(count(events, "turn/start")).toBe(1);
  expect(turnReasons(events)).toEqual(["completed"]);
  expect(assistantTexts(events)).toEqual([answer]);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
}

/** Lets any leftover work of an old instance or a stray alarm show itself, then checks nothing moved. */
async function expectNoLateWork(id: string, events: readonly WireEvent[]): Promise<void> {
  await sleep(300);
  await runDurableObjectAlarm(stub(id));
  expect(await allEvents(id)).toEqual(events);
}

describe("an eviction never loses or duplicates accepted work (semantics.md §1.2, §2.2, §2.6)", () => {
  it("answers a message exactly once when the object is evicted between acceptance and turn start", async () => {
    const { id } = await createSession();
    const reached = deferred();
    const plan = faults(id, (point) => {
      if (point !== "before-drive") return;
      reached.resolve();
      return never();
    });
    const messageId = await sendMessage(id, "survive");
    await reached.promise;
    expect(ofType(await allEvents(id), "turn/start")).toEqual([]);
    plan.remove();

    await evictDurableObject(stub(id));
    expect(await alarmOf(id)).not.toBeNull();
    expect(await runDurableObjectAlarm(stub(id))).toBe(true);

    const events = await allEvents(id);
    expectAnsweredOnce(events, messageId, "echo: survive");
    await evictDurableObject(stub(id));
    await expectNoLateWork(id, events);
  });

  it("repairs a missing alarm at boot so a message accepted before an eviction is still answered once", async () => {
    const { id } = await createSession();
    const reached = deferred();
    const plan = faults(id, (point) => {
      if (point !== "before-drive") return;
      reached.resolve();
      return never();
    });
    const messageId = await sendMessage(id, "repaired");
    await reached.promise;
    plan.remove();
    // the alarm is lost (consumed, or never armed before a crash): only the boot repair can wake the work
    await runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) =>
      state.storage.deleteAlarm(),
    );
    expect(await alarmOf(id)).toBeNull();

    await evictDurableObject(stub(id));
    // nothing but reads from here on: the constructor must arm the alarm by itself
    const events = await waitForTurnEnds(id, 1, 8_000);
    expectAnsweredOnce(events, messageId, "echo: repaired");
    await expectNoLateWork(id, events);
  });

  it("re-runs an interrupted step after an eviction mid-step and appends exactly one answer and one turn/end", async () => {
    const { id } = await createSession();
    const messageId = await sendMessage(id, script({ think: 2000 }, { say: "x" }));
    await waitForEvents(id, (es) => count(es, "turn/start") === 1);

    await evictDurableObject(stub(id));
    await runDurableObjectAlarm(stub(id));
    const events = await waitForTurnEnds(id, 1, 8_000);
    expectAnsweredOnce(events, messageId, "x");
    // the evicted instance's model call (its 2 s think) must not append anything later
    await sleep(2_200);
    await expectNoLateWork(id, events);
  });

  it("re-runs a step that crashed after the model returned but before the append, and appends one answer", async () => {
    const { id } = await createSession();
    // park the in-process driver so the step runs from the alarm, where a crash surfaces
    const reached = deferred();
    const parking = faults(id, (point) => {
      if (point !== "before-drive") return;
      reached.resolve();
      return never();
    });
    const messageId = await sendMessage(id, script({ say: "appended once" }));
    await reached.promise;
    parking.remove();
    await evictDurableObject(stub(id));

    let crashes = 0;
    const plan = faults(id, (point) => {
      if (point === "before-append" && crashes++ === 0) throw new Error("crash before append (injected)");
    });
    await expect(runDurableObjectAlarm(stub(id))).rejects.toThrow("crash before append (injected)");
    const crashed = await allEvents(id);
    expect(count(crashed, "turn/start")).toBe(1);
    expect(count(crashed, "user/message")).toBe(1);
    expect(count(crashed, "assistant/message")).toBe(0);
    expect(count(crashed, "turn/end")).toBe(0);

    // a restart finds the open turn and re-runs its step once
    await evictDurableObject(stub(id));
    await runDurableObjectAlarm(stub(id));
    const events = await waitForTurnEnds(id, 1, 8_000);
    plan.remove();
    expectAnsweredOnce(events, messageId, "appended once");
    expect(plan.count("before-append")).toBe(2);
    expect(plan.count("after-append")).toBe(1);
    await expectNoLateWork(id, events);
  });

  it("keeps every event and every row when an idle session is evicted, and continues seq without a gap", async () => {
    const { id } = await createSession();
    await sendMessage(id, "one");
    await sendMessage(id, "two");
    const before = await waitForTurnEnds(id, 2);
    const hash = await tablesHash(id);

    await evictDurableObject(stub(id));
    expect(await allEvents(id)).toEqual(before);
    expect(await tablesHash(id)).toBe(hash);

    await sendMessage(id, "three");
    const after = await waitForTurnEnds(id, 3);
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.map((e) => e.seq)).toEqual(after.map((_, i) => i));
    expect(turnsOf(after).map((t) => t.turn)).toEqual([1, 2, 3]);
    expect(assistantTexts(after)).toEqual(["echo: one", "echo: two", "echo: three"]);
  });
});
