import { describe, expect, it } from "vitest";
import { rpc, rpcFailure, startContinuable, startRun, waitForRun } from "../../support/api";
import { reservedId } from "../../support/ids";
import { runScript, toolResults } from "../../support/logs";
import { childRows, evict, quiesce, registryStub, stub, tablesOf } from "../../support/objects";
import { expectRefused, MAX_SESSIONS_PER_TREE, setTreeSlots, stateOf, treeSlots } from "../../support/quotas";
import { toolCall } from "../../support/scripts";
import { createSession } from "../../support/api";

/**
 * The tree quota at its root (README, Security and limits: "Quotas", src/core/quotas.ts): a top-level session and
 * every session below it are one tree of at most MAX_SESSIONS_PER_TREE (10000 in wrangler.toml)
 * sessions. The root counts its own children by their rows, so a start from it asks nobody else.
 */

const FULL = /already holds 10000 sessions \(MAX_SESSIONS_PER_TREE\)/;

describe("a start from a tree's root past MAX_SESSIONS_PER_TREE", () => {
  it("starts the child that makes 10000 sessions, and refuses the next on every face with 422 QUOTA_EXCEEDED before any child exists", async () => {
    const root = await createSession({ label: "tree-quota-root" });
    // 9998 sessions below the root's children took their place already: with the root, 9999
    await setTreeSlots(root.id, MAX_SESSIONS_PER_TREE - 2);
    await evict(root.id); // written behind the live instance: a restart reads it

    const lastKey = crypto.randomUUID();
    const last = reservedId(root.id, lastKey);
    const accepted = await startRun(root.id, { prompt: "hi", childId: lastKey });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    expect(accepted.body.id).toBe(last);
    await waitForRun(root.id, accepted.body.runId);
    await quiesce([root.id, last]);

    const overKey = crypto.randomUUID();
    const over = reservedId(root.id, overKey); // where a refused start's child would have been
    const objects = [stub(root.id), stub(last), stub(over), registryStub()];
    const before = await stateOf(objects);
    expectRefused(await startRun(root.id, { prompt: "hi", childId: overKey }), 422, "QUOTA_EXCEEDED", FULL);
    expectRefused(
      await startContinuable(root.id, { prompt: "hi", childId: overKey }),
      422,
      "QUOTA_EXCEEDED",
      FULL,
    );
    expect(await rpcFailure(() => rpc.start(root.id, { provider: "spawn", prompt: "hi" }))).toMatch(
      /^QUOTA_EXCEEDED: .*MAX_SESSIONS_PER_TREE/,
    );
    expect(
      await rpcFailure(() => rpc.startContinuable(root.id, { provider: "spawn", prompt: "hi", label: "x" })),
    ).toMatch(/^QUOTA_EXCEEDED: .*MAX_SESSIONS_PER_TREE/);
    expect(await stateOf(objects)).toBe(before);
    expect(await tablesOf(over)).toEqual([]);

    // the model's tool gets an error result, and its turn goes on
    const log = await runScript(
      root.id,
      { call: [toolCall("subagent", { description: "one more", prompt: "hi" })] },
      { say: "noted" },
    );
    expect(toolResults(log, "subagent")).toEqual([
      expect.objectContaining({ isError: true, text: expect.stringMatching(FULL) }),
    ]);
    expect(log.at(-1)).toMatchObject({ type: "turn/end", data: { reason: "completed" } });
    expect(await childRows(root.id)).toHaveLength(1);
    expect(await treeSlots(root.id)).toBe(MAX_SESSIONS_PER_TREE - 2);
  }, 60_000);
});
