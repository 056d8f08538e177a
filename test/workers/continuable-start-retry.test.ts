import { afterEach, describe, expect, it } from "vitest";
import { createSession, startContinuable } from "../support/api";
import { faults, removeAllFaults } from "../support/faults";
import { count, waitForEvents } from "../support/logs";
import { sqlRows } from "../support/objects";

/**
 * A start with a caller-reserved `childId` is keyed by its request: the same request again is a
 * retry (after a 503, or after an answer the caller never saw) and gets the same child; a
 * different request for the id is `DUPLICATE_CHILD`.
 */
describe("a retried continuable start with a caller-reserved child id", () => {
  afterEach(() => removeAllFaults());

  it("after a 503 (the child's init failed before it committed), the same request creates the child once", async () => {
    const parent = await createSession();
    const childId = crypto.randomUUID();
    const plan = faults(childId, (point, n) => (point === "in-init" && n === 1 ? "throw" : undefined));
    const body = { prompt: "retried start", childId, label: "retry" };

    const first = await startContinuable(parent.id, body);
    expect(first.status).toBe(503);
    expect(first.body.error.code).toBe("OVERLOADED");
    expect(await sqlRows(parent.id, "SELECT child_id FROM children")).toEqual([]);

    const other = await startContinuable(parent.id, { ...body, prompt: "another request" });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe("DUPLICATE_CHILD");

    const retried = await startContinuable(parent.id, { label: "retry", childId, prompt: "retried start" });
    expect(retried.status).toBe(202);
    expect(retried.body.childId).toBe(childId);
    expect(plan.count("in-init")).toBe(2);
    const log = await waitForEvents(parent.id, (es) => count(es, "subagent/end") === 1);
    expect(count(log, "subagent/start")).toBe(1);
    const childLog = await waitForEvents(childId, (es) => count(es, "turn/end") === 1);
    expect(count(childLog, "turn/start")).toBe(1);
  });

  it("a retry of a start that went through answers the same child and message, and starts nothing", async () => {
    const parent = await createSession();
    const childId = crypto.randomUUID();
    const body = { prompt: "answered once", childId };
    const first = await startContinuable(parent.id, body);
    expect(first.status).toBe(202);
    await waitForEvents(parent.id, (es) => count(es, "subagent/end") === 1);

    const again = await startContinuable(parent.id, body);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    const differs = await startContinuable(parent.id, { ...body, label: "other" });
    expect(differs.status).toBe(409);
    expect(differs.body.error.code).toBe("DUPLICATE_CHILD");

    const log = await waitForEvents(parent.id, (es) => count(es, "subagent/end") === 1);
    expect(count(log, "subagent/start")).toBe(1);
    const [row] = await sqlRows<{ state: string }>(
      parent.id,
      "SELECT state FROM children WHERE child_id = ?",
      childId,
    );
    expect(row?.state).toBe("released"); // the retry did not take ownership again
  });
});
