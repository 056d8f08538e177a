import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api, createSession, field, sendMessage } from "../../support/api";
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
} from "../../support/logs";
import { sqlRows, stub, tablesHash } from "../../support/objects";
import { script } from "../../support/scripts";

async function interrupt(id: string): Promise<void> {
  const res = await api("POST", `/v1/sessions/${id}/interrupt`);
  expect(res.status).toBe(202);
  expect(res.body).toEqual({ accepted: true });
}

/** Sends a message whose in-process driver hangs after acceptance, then evicts: only an alarm can run it. */
async function acceptedButNotStarted(id: string, content: string): Promise<string> {
  const reached = deferred();
  const plan = faults(id, (point) => {
    if (point !== "before-drive") return;
    reached.resolve();
    return never();
  });
  const messageId = await sendMessage(id, content);
  await reached.promise;
  plan.remove();
  await evictDurableObject(stub(id));
  return messageId;
}

describe("the alarm drives owed work, and fencing drops stale results (semantics.md §2.2, §2.5, §2.6)", () => {
  it("retries an alarm that threw and completes the work exactly once", async () => {
    const { id } = await createSession();
    const messageId = await acceptedButNotStarted(id, "after a failed alarm");
    let throws = 0;
    const plan = faults(id, (point) => {
      if (point === "in-alarm" && throws++ === 0) throw new Error("alarm crashed (injected)");
    });
    // fire the real alarm now: the platform retries a thrown alarm with backoff
    await runInDurableObject(stub(id), (_instance: unknown, state: DurableObjectState) =>
      state.storage.setAlarm(Date.now() + 10),
    );
    const events = await waitForTurnEnds(id, 1, 12_000);
    plan.remove();

    expect(plan.count("in-alarm")).toBeGreaterThanOrEqual(2);
    expect(ofType(events, "user/message").map((e) => e.data.messageId)).toEqual([messageId]);
    expect(turnReasons(events)).toEqual(["completed"]);
    expect(assistantTexts(events)).toEqual(["echo: after a failed alarm"]);
  });

  it("leaves owed work untouched when the alarm handler throws, and runs it when the alarm runs again", async () => {
    const { id } = await createSession();
    const messageId = await acceptedButNotStarted(id, "second attempt");
    let throws = 0;
    const plan = faults(id, (point) => {
      if (point === "in-alarm" && throws++ === 0) throw new Error("alarm crashed (injected)");
    });

    await expect(runDurableObjectAlarm(stub(id))).rejects.toThrow("alarm crashed (injected)");
    const afterCrash = await allEvents(id);
    expect(afterCrash.map((e) => e.type)).toEqual(["agent/inbox/inserted"]);
    expect(await sqlRows(id, "SELECT state FROM inbox")).toEqual([{ state: "pending" }]);

    // the test helper consumed the alarm; a restart repairs it, and the next run completes the work
    await evictDurableObject(stub(id));
    await runDurableObjectAlarm(stub(id));
    const events = await waitForTurnEnds(id, 1, 8_000);
    plan.remove();
    expect(plan.count("in-alarm")).toBeGreaterThanOrEqual(2);
    expect(ofType(events, "user/message").map((e) => e.data.messageId)).toEqual([messageId]);
    expect(assistantTexts(events)).toEqual(["echo: second attempt"]);
    expect(turnReasons(events)).toEqual(["completed"]);
  });

  it("drops the model result of a turn that was interrupted while the model was thinking", async () => {
    const { id } = await createSession();
    await sendMessage(id, script({ think: 1500 }, { say: "too late" }));
    await waitForEvents(id, (es) => count(es, "turn/start") === 1);
    await interrupt(id);

    const ended = await waitForTurnEnds(id, 1);
    const end = ofType(ended, "turn/end")[0]!;
    expect(end.data).toMatchObject({ turn: 1, reason: "aborted" });
    // well past the think: the aborted call never appends an answer or a second terminal event
    await sleep(1_800);
    const events = await allEvents(id);
    expect(count(events, "assistant/message")).toBe(0);
    expect(turnReasons(events)).toEqual(["aborted"]);
    expect(events.at(-1)).toEqual(end);

    // the session still works: the next message gets its own completed turn
    await sendMessage(id, "next");
    const after = await waitForTurnEnds(id, 2);
    expect(turnReasons(after)).toEqual(["aborted", "completed"]);
    expect(assistantTexts(after)).toEqual(["echo: next"]);
  });

  it("drops the reply of a stale step that arrives after an interrupt and a new message", async () => {
    const { id } = await createSession();
    const reached = deferred();
    const release = deferred();
    let calls = 0;
    const plan = faults(id, (point) => {
      if (point !== "after-model" || calls++ > 0) return;
      reached.resolve();
      return release.promise;
    });
    await sendMessage(id, script({ say: "stale" }));
    await reached.promise; // the model answered "stale"; the step has not appended it yet

    await interrupt(id);
    const freshId = await sendMessage(id, "fresh");
    release.resolve();

    const events = await waitForTurnEnds(id, 2);
    await sleep(200);
    const settled = await allEvents(id);
    plan.remove();
    expect(settled).toEqual(events);
    expect(assistantTexts(events)).toEqual(["echo: fresh"]);
    expect(turnReasons(events)).toEqual(["aborted", "completed"]);
    const turns = turnsOf(events);
    expect(ofType(turns[0]!.events, "assistant/message")).toEqual([]);
    expect(ofType(turns[1]!.events, "user/message").map((e) => e.data.messageId)).toEqual([freshId]);
    expect(ofType(turns[1]!.events, "assistant/message")).toHaveLength(1);
  });

  it("keeps unclaimed messages parked after an interrupt until the next message, then runs them first in order", async () => {
    const { id } = await createSession();
    await sendMessage(id, script({ think: 2000 }, { say: "never said" }));
    await waitForEvents(id, (es) => count(es, "turn/start") === 1);
    const parked = [await sendMessage(id, "parked one"), await sendMessage(id, "parked two")];
    await interrupt(id);

    // the two stay pending: no new turn, even when the alarm runs
    await sleep(400);
    await runDurableObjectAlarm(stub(id));
    await sleep(200);
    const waiting = await allEvents(id);
    expect(count(waiting, "turn/start")).toBe(1);
    expect(turnReasons(waiting)).toEqual(["aborted"]);
    expect(
      await sqlRows(
        id,
        "SELECT message_id, state FROM inbox WHERE message_id IN (?, ?) ORDER BY position",
        ...parked,
      ),
    ).toEqual(parked.map((messageId) => ({ message_id: messageId, state: "pending" })));
    const view = await api("GET", `/v1/sessions/${id}`);
    expect(field(view.body, "status")).toBe("idle");

    const newest = await sendMessage(id, "newest");
    const events = await waitForTurnEnds(id, 4);
    expect(turnReasons(events)).toEqual(["aborted", "completed", "completed", "completed"]);
    const turns = turnsOf(events);
    expect(turns.slice(1).map((t) => ofType(t.events, "user/message").map((e) => e.data.messageId))).toEqual([
      [parked[0]],
      [parked[1]],
      [newest],
    ]);
    expect(assistantTexts(events)).toEqual(["echo: parked one", "echo: parked two", "echo: newest"]);
  });

  it("appends nothing when an idle session is interrupted", async () => {
    const { id } = await createSession();
    await sendMessage(id, "done before the interrupt");
    await waitForTurnEnds(id, 1);
    const before = await tablesHash(id);
    await interrupt(id);
    await sleep(100);
    expect(await tablesHash(id)).toBe(before);
    expect(turnReasons(await allEvents(id))).toEqual(["completed"]);
  });
});
