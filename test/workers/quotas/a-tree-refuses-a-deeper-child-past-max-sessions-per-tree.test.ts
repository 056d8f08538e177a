import { describe, expect, it } from "vitest";
import { createSession, startChild, startContinuable, startRun, waitForRun } from "../../support/api";
import { reservedId } from "../../support/ids";
import { count, waitForEvents } from "../../support/logs";
import { evict, quiesce, registryStub, specOf, sqlRows, stub, tablesOf } from "../../support/objects";
import { expectRefused, MAX_SESSIONS_PER_TREE, setTreeSlots, stateOf, treeSlots } from "../../support/quotas";

/**
 * The tree quota below the root (src/core/quotas.ts, delegation/child-spec.ts): a child whose
 * parent is not the top of its tree takes its place from the root, in its own `init`, before
 * anything of it is stored; the root is the one counter, whoever starts the child, at any depth.
 */

const FULL = /already holds 10000 sessions \(MAX_SESSIONS_PER_TREE\)/;

describe("a start below a tree's root past MAX_SESSIONS_PER_TREE", () => {
  it("counts the 10000th session at the root once (a retried init too), and refuses the next with 422 QUOTA_EXCEEDED, storing nothing anywhere", async () => {
    const root = await createSession({ label: "tree-quota-deep" });
    const { childId: mid } = await startChild(root.id, { prompt: "hi" });
    await waitForEvents(mid, (l) => count(l, "turn/end") === 1);
    await quiesce([root.id, mid]);
    // the root, its child `mid`, and 9997 deeper sessions: 9999
    await setTreeSlots(root.id, MAX_SESSIONS_PER_TREE - 3);
    await evict(root.id);

    const lastKey = crypto.randomUUID();
    const last = reservedId(mid, lastKey);
    const accepted = await startRun(mid, { prompt: "hi", childId: lastKey });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    expect(accepted.body.id).toBe(last);
    await waitForRun(mid, accepted.body.runId);
    await quiesce([root.id, mid, last]);
    expect(await treeSlots(root.id)).toBe(MAX_SESSIONS_PER_TREE - 2);
    expect(await sqlRows(root.id, "SELECT child_id FROM tree_slots WHERE child_id = ?", last)).toEqual([
      { child_id: last },
    ]);

    // the parent's retry of that child's init (its answer lost) takes no second place
    expect(await stub(last).init(await specOf(mid, last))).toEqual({ ok: true, value: { id: last } });
    expect(await treeSlots(root.id)).toBe(MAX_SESSIONS_PER_TREE - 2);

    const overKey = crypto.randomUUID();
    // the ids the refused children would have had, below `mid` and below `last`
    const over = [reservedId(mid, overKey), reservedId(last, overKey)];
    const objects = [stub(root.id), stub(mid), stub(last), ...over.map(stub), registryStub()];
    const before = await stateOf(objects);
    expectRefused(await startRun(mid, { prompt: "hi", childId: overKey }), 422, "QUOTA_EXCEEDED", FULL);
    expectRefused(
      await startContinuable(mid, { prompt: "hi", childId: overKey }),
      422,
      "QUOTA_EXCEEDED",
      FULL,
    );
    expectRefused(await startRun(last, { prompt: "hi", childId: overKey }), 422, "QUOTA_EXCEEDED", FULL);
    expect(await stateOf(objects)).toBe(before);
    for (const id of over) expect(await tablesOf(id)).toEqual([]);
  }, 60_000);
});
