import { startChild } from "./api";
import { count, startedChildId, toolResults, waitForEvents } from "./logs";
import { LONG_TURN, script, spawnCall } from "./scripts";

/**
 * A small tree of continuable children for the drain and interrupt tests: a root whose child
 * (`mid`) starts a long-thinking continuable grandchild (`leaf`) and then goes on thinking itself.
 */

/** The prompt of `mid`: start `leaf` (a long turn) in the background, then `afterSpawn`, then `last`. */
export function middle(afterSpawn: unknown = { think: 10_000 }, last: unknown = { say: "mid done" }): string {
  return script({ call: [spawnCall("leaf", LONG_TURN)] }, afterSpawn, last);
}

/** Starts root -> mid -> leaf and waits until the leaf's turn runs; returns the ids. */
export async function forest(rootId: string, mid: string = middle()): Promise<{ mid: string; leaf: string }> {
  const { childId } = await startChild(rootId, { prompt: mid, label: "mid" });
  const midLog = await waitForEvents(childId, (l) => toolResults(l, "subagent").length === 1);
  const leaf = startedChildId(midLog);
  await waitForEvents(leaf, (l) => count(l, "turn/start") === 1);
  return { mid: childId, leaf };
}
