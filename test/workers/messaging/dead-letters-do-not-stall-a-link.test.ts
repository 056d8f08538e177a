import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MAX_ATTEMPTS } from "../../../durable-objects/store/outbox";
import { createSession, followup, startChild } from "../../support/api";
import { clock, driveUntil, faults, removeAllFaults } from "../../support/faults";
import { allEvents, ofType } from "../../support/logs";
import { outboxOf, quiesce, sqlRows } from "../../support/objects";

/**
 * The receiver applies a link's envelopes in order (semantics.md §11.2). An envelope the sender
 * dead-letters never arrives, so the next one on that link says what it follows: the receiver
 * applies it past the gap instead of refusing it as out of order until it dead-letters too.
 */

beforeEach(() => clock.freeze());
afterEach(() => {
  removeAllFaults();
  clock.release();
});

/** Drives both sessions until every row of the child's outbox is delivered or dead. */
async function settleOutbox(parentId: string, childId: string, rows: number): Promise<void> {
  await driveUntil(
    [parentId, childId],
    async () => {
      const outbox = await outboxOf(childId);
      return outbox.length >= rows && outbox.every((r) => r.delivered_at !== null || r.dead_at !== null);
    },
    `the child's ${rows} outbox rows to be delivered or dead`,
    { rounds: 80, stepMs: 70_000 },
  );
  await quiesce([parentId, childId]);
}

describe("a dead letter does not stall its link", () => {
  it("after a child's first settlement notice dead-letters, its next epoch's notice is applied", async () => {
    const parent = await createSession();
    // the parent refuses every delivery until the first notice has used up its attempts
    const plan = faults(parent.id, (point, n) =>
      point === "before-apply" && n <= MAX_ATTEMPTS ? "throw" : undefined,
    );
    const { childId } = await startChild(parent.id, { prompt: "first epoch" });
    await settleOutbox(parent.id, childId, 1);
    const [first] = await outboxOf(childId);
    expect(first).toMatchObject({ kind: "settled", dead_at: expect.any(Number), delivered_at: null });
    expect(plan.count("before-apply")).toBe(MAX_ATTEMPTS);
    expect(ofType(await allEvents(parent.id), "subagent/end")).toEqual([]);

    // the parent is reachable again; a follow-up starts a second epoch, whose notice follows the gap
    const resumed = await followup(parent.id, childId, "second epoch");
    expect(resumed.status).toBe(202);
    await settleOutbox(parent.id, childId, 2);
    const [, second] = await outboxOf(childId);
    expect(second).toMatchObject({ kind: "settled", dead_at: null, delivered_at: expect.any(Number) });
    expect(JSON.parse(second!.payload)).toMatchObject({ linkSeq: 2 });

    const ends = ofType(await allEvents(parent.id), "subagent/end");
    expect(ends).toHaveLength(1);
    expect(ends[0]!.data).toMatchObject({ id: childId, stopReason: "completed" });
    const [link] = await sqlRows<{ next_seq: number }>(
      parent.id,
      "SELECT next_seq FROM links WHERE sender = ?",
      childId,
    );
    expect(link?.next_seq).toBe(3);
  });
});
