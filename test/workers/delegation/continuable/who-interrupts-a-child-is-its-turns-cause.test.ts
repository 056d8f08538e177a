import { expect, it } from "vitest";
import { api, createSession, interruptChild, sendMessage, startChild } from "../../../support/api";
import { count, quiet, toolResults, turnEndCauses, waitForEvents } from "../../../support/logs";
import { LONG_TURN, script } from "../../../support/scripts";

/**
 * The cause on a child's aborted turn says through whom it was stopped (semantics.md §2.5, §7.2):
 * `parent` when it came down its lineage (its parent's agent with `interrupt_agent`, or a caller of
 * the parent's `…/subagents/:childId/interrupt` route, HTTP or RPC), `user` when a caller used the
 * child's own `POST /v1/sessions/:id/interrupt`.
 */

it("who interrupts a child is its turn's cause: the parent's interrupt_agent and the parent's route record parent; the child's own route records user", async () => {
  const root = await createSession();
  const { childId: byTool } = await startChild(root.id, { prompt: LONG_TURN, label: "by-tool" });
  const { childId: byRoute } = await startChild(root.id, { prompt: LONG_TURN, label: "by-route" });
  const { childId: byOwn } = await startChild(root.id, { prompt: LONG_TURN, label: "by-own" });
  for (const id of [byTool, byRoute, byOwn]) await waitForEvents(id, (l) => count(l, "turn/start") === 1);

  await sendMessage(
    root.id,
    script({ call: [{ tool: "interrupt_agent", args: { agent_id: byTool } }] }, { say: "stopped" }),
  );
  await waitForEvents(root.id, (l) => toolResults(l, "interrupt_agent").length === 1);
  expect((await interruptChild(root.id, byRoute)).status).toBe(202);
  expect((await api("POST", `/v1/sessions/${byOwn}/interrupt`)).status).toBe(202);

  expect(turnEndCauses(await quiet(byTool))).toEqual([{ reason: "aborted", cause: "parent" }]);
  expect(turnEndCauses(await quiet(byRoute))).toEqual([{ reason: "aborted", cause: "parent" }]);
  expect(turnEndCauses(await quiet(byOwn))).toEqual([{ reason: "aborted", cause: "user" }]);
});
