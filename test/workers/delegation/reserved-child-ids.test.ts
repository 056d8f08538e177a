import { afterEach, describe, expect, it } from "vitest";
import { createSession, drain, expectError, startContinuable, startRun, waitForRun } from "../../support/api";
import { deferred, faults, removeAllFaults } from "../../support/faults";
import { reservedId } from "../../support/ids";
import { allEvents, count, sleep } from "../../support/logs";
import { sqlRows } from "../../support/objects";
import { LONG_TURN } from "../../support/scripts";

/**
 * A caller-reserved child id belongs to one start (semantics.md §10.4, §10.5): a retry of that
 * start that arrives while it is still creating the child waits for its outcome instead of
 * answering first, and a start of the other mode cannot take the id.
 */
describe("caller-reserved child ids", () => {
  afterEach(() => removeAllFaults());

  it("a one-shot retry that arrives while the first attempt is still creating the child gets that attempt's answer", async () => {
    const parent = await createSession();
    const childId = crypto.randomUUID();
    const gate = deferred();
    const plan = faults(reservedId(parent.id, childId), (point, n) =>
      point === "in-init" && n === 1 ? gate.promise : undefined,
    );
    const body = { prompt: "slow to create", childId };

    const first = startRun(parent.id, body);
    await plan.reached("in-init");
    const retry = startRun(parent.id, body);
    // the retry does not answer before the first attempt knows whether the child exists
    expect(await Promise.race([retry.then(() => "answered"), sleep(300).then(() => "waiting")])).toBe(
      "waiting",
    );
    gate.resolve();
    const [a, b] = await Promise.all([first, retry]);
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body).toEqual(a.body);
    expect(plan.count("in-init")).toBe(1); // the retry created nothing of its own
    expect((await waitForRun(parent.id, a.body.runId)).result.stopReason).toBe("completed");
    expect(count(await allEvents(parent.id), "subagent/start")).toBe(1);
  });

  it("an id used by a one-shot start cannot start a continuable child, and the other way round", async () => {
    const parent = await createSession();
    const oneShotId = crypto.randomUUID();
    expect((await startRun(parent.id, { prompt: "one-shot", childId: oneShotId })).status).toBe(201);
    expectError(
      await startContinuable(parent.id, { prompt: "continuable", childId: oneShotId }),
      409,
      "DUPLICATE_CHILD",
    );

    const continuableId = crypto.randomUUID();
    expect(
      (await startContinuable(parent.id, { prompt: "continuable", childId: continuableId })).status,
    ).toBe(202);
    expectError(
      await startRun(parent.id, { prompt: "one-shot", childId: continuableId }),
      409,
      "DUPLICATE_CHILD",
    );
  });

  it("an id held after an ambiguous one-shot failure cannot be taken by a continuable start", async () => {
    const parent = await createSession();
    const childId = crypto.randomUUID();
    faults(reservedId(parent.id, childId), (point, n) =>
      point === "in-init" && n <= 3 ? "throw" : undefined,
    );
    expectError(await startRun(parent.id, { prompt: "held", childId }), 503, "OVERLOADED");
    expectError(await startContinuable(parent.id, { prompt: "taker", childId }), 409, "DUPLICATE_CHILD");
  });
});

describe("a held start and a drain", () => {
  afterEach(() => removeAllFaults());

  it("a drained child's held one-shot start is abandoned: its child is told to cancel and no retry can start it", async () => {
    const parent = await createSession();
    const child = await startContinuable(parent.id, { prompt: LONG_TURN });
    expect(child.status).toBe(202);
    const childId: string = child.body.childId;
    const grandchild = crypto.randomUUID();
    faults(reservedId(childId, grandchild), (point, n) =>
      point === "in-init" && n <= 3 ? "throw" : undefined,
    );
    expectError(await startRun(childId, { prompt: "held", childId: grandchild }), 503, "OVERLOADED");
    expect(await sqlRows(childId, "SELECT held_until IS NOT NULL AS held FROM runs")).toEqual([{ held: 1 }]);

    const drained = await drain(parent.id);
    expect(drained.status).toBe(200);
    expect(await sqlRows(childId, "SELECT run_id FROM runs")).toEqual([]);
    const cancels = await sqlRows<{ kind: string; target: string }>(
      childId,
      "SELECT kind, target FROM outbox WHERE kind = 'cancel-run'",
    );
    expect(cancels).toEqual([{ kind: "cancel-run", target: reservedId(childId, grandchild) }]);
  });
});
