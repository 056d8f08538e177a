import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { backoffMs, MAX_ATTEMPTS, RESTARTED_DURING_SEND } from "../../../durable-objects/store/outbox";
import type { ChildInit } from "../../../src/contract/child-init";
import type { Envelope } from "../../../src/contract/envelope";
import type { SessionObject } from "../../../src/index";
import { api } from "../../support/api";
import {
  clock,
  driveToSettlement,
  expectExactlyOnce,
  expectQuiet,
  removeAllFaults,
  startWithFaults,
} from "../../support/faults";
import { allEvents, ofType, waitForEvents } from "../../support/logs";
import { alarmOf, evict, outboxOf, quiesce, specOf, sqlRows, stub, tablesOf } from "../../support/objects";

/**
 * Delivery between objects (semantics.md §11), on one-shot result envelopes: the receiver applies
 * an envelope once (§11.3) and a row that cannot be delivered is dead-lettered after its attempts,
 * visibly, with the alarm stopping for it (§11.4). The clock is frozen (test/support/faults.ts says
 * why), so every retry runs when the test fires the alarm.
 */

beforeEach(() => clock.freeze());
afterEach(() => {
  removeAllFaults();
  clock.release();
});

/** A one-shot child whose result is owed to a parent session that was never created. */
async function orphanChild(): Promise<{ ghost: string; childId: string; runId: string }> {
  // a real spec, pointed at a parent that does not exist
  const template = await startWithFaults("spec template");
  const ghost = crypto.randomUUID();
  const childId = crypto.randomUUID();
  const runId = crypto.randomUUID();
  const spec: ChildInit = {
    ...(await specOf(template.parentId, template.childId)),
    id: childId,
    parentSession: ghost,
    runId,
    lineage: [ghost],
    prompt: [{ type: "text", text: "orphan" }],
  };
  expect(await stub(childId).init(spec)).toEqual({ ok: true, value: { id: childId } });
  await waitForEvents(childId, (l) => ofType(l, "turn/end").length > 0, { what: "the child's turn to end" });
  await quiesce([childId]);
  return { ghost, childId, runId };
}

describe("delivery between objects (semantics.md §11)", () => {
  it("a result delivered twice is applied once", async () => {
    const s = await startWithFaults("double delivery");
    expect(s.status).toBe(201);
    const runId = await s.runId();
    await driveToSettlement(s.parentId, s.childId, s.runId);
    await expectExactlyOnce({ parentId: s.parentId, childId: s.childId, runId, output: s.output });
    await quiesce([s.parentId, s.childId]);
    const envelope = JSON.parse((await outboxOf(s.childId))[0]!.payload) as Envelope;
    const before = await allEvents(s.parentId);

    expect(await stub(s.parentId).deliver(envelope)).toEqual({ ok: true, value: { applied: false } });
    expect(
      await runInDurableObject(stub(s.parentId), (instance: SessionObject) => instance.deliver(envelope)),
    ).toEqual({ ok: true, value: { applied: false } });
    await evict(s.parentId);
    expect(await stub(s.parentId).deliver(envelope)).toEqual({ ok: true, value: { applied: false } });
    await quiesce([s.parentId]);
    expect(await allEvents(s.parentId)).toEqual(before);
    await expectExactlyOnce({ parentId: s.parentId, childId: s.childId, runId, output: s.output });

    // another envelope for the same run (a different id) cannot settle it a second time
    const second = {
      ...envelope,
      id: `${envelope.id}:again`,
      result: { output: [{ type: "text", text: "second answer" }], stopReason: "completed" },
    } as Envelope;
    expect((await stub(s.parentId).deliver(second)).ok).toBe(true);
    await quiesce([s.parentId]);
    expect(await allEvents(s.parentId)).toEqual(before);
    const run = await api("GET", `/v1/sessions/${s.parentId}/runs/${runId}`);
    expect(run.body.result.output).toEqual([{ type: "text", text: s.output }]);
    await expectQuiet([s.parentId, s.childId]);
  });

  it("a result for a parent that does not exist dead-letters after the attempt limit and the alarm stops", async () => {
    const { ghost, childId, runId } = await orphanChild();

    const backoffs: number[] = [];
    for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
      const [row] = await outboxOf(childId);
      expect(row).toMatchObject({ id: `result:${runId}`, target: ghost, attempts: attempt, dead_at: null });
      expect(row!.last_error).toContain("does not exist");
      backoffs.push(row!.next_at - Date.now());
      expect(await alarmOf(childId)).toBe(row!.next_at); // re-armed to the retry
      clock.set(row!.next_at);
      expect(await runDurableObjectAlarm(stub(childId))).toBe(true);
      await quiesce([childId]);
    }
    expect(backoffs).toEqual(Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) => backoffMs(i + 1, false)));

    const [dead] = await outboxOf(childId);
    expect(dead).toMatchObject({ attempts: MAX_ATTEMPTS, delivered_at: null });
    expect(dead!.dead_at).not.toBeNull();
    const letters = ofType(await allEvents(childId), "outbox/dead-letter");
    expect(letters.map((e) => e.data)).toEqual([
      {
        outboxId: `result:${runId}`,
        target: ghost,
        kind: "run-result",
        attempts: MAX_ATTEMPTS,
        error: expect.stringContaining("does not exist"),
      },
    ]);

    // no retry loop: nothing is armed, and time passing changes nothing
    expect(await alarmOf(childId)).toBeNull();
    expect(await runDurableObjectAlarm(stub(childId))).toBe(false);
    const after = await allEvents(childId);
    await expectQuiet([childId]);
    expect(await allEvents(childId)).toEqual(after);
    expect((await outboxOf(childId))[0]!.attempts).toBe(MAX_ATTEMPTS);
    // delivering to the missing parent never created it
    expect(await tablesOf(ghost)).toEqual([]);
  });

  it("a send the object never finished (it restarted during it) is a failed attempt; crashing during every send dead-letters", async () => {
    const { ghost, childId, runId } = await orphanChild();
    const [first] = await outboxOf(childId);
    expect(first).toMatchObject({ attempts: 1, sends: 1 }); // one send, finished (failed)

    // the second send began, and the object went down before it finished
    await sqlRows(childId, "UPDATE outbox SET sends = 2 WHERE id = ?", `result:${runId}`);
    await evict(childId);
    clock.set(first!.next_at);
    await runDurableObjectAlarm(stub(childId));
    await quiesce([childId]);
    const [counted] = await outboxOf(childId);
    // counted as attempt 2 and backed off, without sending now (no delivery error recorded)
    expect(counted).toMatchObject({
      attempts: 2,
      sends: 2,
      last_error: RESTARTED_DURING_SEND,
      dead_at: null,
    });
    expect(counted!.next_at - Date.now()).toBe(backoffMs(2, false));

    // a send that crashes the object every time: the last allowed one is cut short too
    await sqlRows(
      childId,
      "UPDATE outbox SET attempts = ?, sends = ? WHERE id = ?",
      MAX_ATTEMPTS - 1,
      MAX_ATTEMPTS,
      `result:${runId}`,
    );
    await evict(childId);
    clock.set(counted!.next_at);
    await runDurableObjectAlarm(stub(childId));
    await quiesce([childId]);
    const [dead] = await outboxOf(childId);
    expect(dead).toMatchObject({ attempts: MAX_ATTEMPTS, last_error: RESTARTED_DURING_SEND });
    expect(dead!.dead_at).not.toBeNull();
    expect(ofType(await allEvents(childId), "outbox/dead-letter").map((e) => e.data)).toEqual([
      {
        outboxId: `result:${runId}`,
        target: ghost,
        kind: "run-result",
        attempts: MAX_ATTEMPTS,
        error: RESTARTED_DURING_SEND,
      },
    ]);
    expect(await alarmOf(childId)).toBeNull();
  });
});
