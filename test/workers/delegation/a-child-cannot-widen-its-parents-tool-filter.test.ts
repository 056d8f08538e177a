import { describe, expect, it } from "vitest";
import { createSession, rpc, sendMessage, startChild, startOneShot, waitForRun } from "../../support/api";
import { fakeRequestsMentioning, toolNames } from "../../support/fake-openai";
import {
  allEvents,
  startedChildId,
  toolResults,
  waitForEvents,
  waitForTurnEnds,
  type WireEvent,
} from "../../support/logs";
import { script } from "../../support/scripts";

/**
 * A tool filter is a boundary the tree cannot step around (semantics.md §2.3): a child's effective
 * filter is its parent's effective filter intersected with its own start request's, on every start
 * path (HTTP and RPC, one-shot and continuable, the model's `subagent` tool) and down any depth.
 * Every session here descends from one created with `toolFilter: {deny: ["echo"]}`, and every
 * child's scripted model calls `echo` anyway.
 */

const DENIED = { toolFilter: { deny: ["echo"] } };

/** A script whose first step calls `echo` and whose second says `after`. */
function callsEcho(after: string): string {
  return script({ call: [{ tool: "echo", args: { text: "the filter leaked" } }] }, { say: after });
}

/** The child's `echo` call was refused as a tool it does not have, and nothing was echoed. */
function expectEchoRefused(log: readonly WireEvent[]): void {
  const results = toolResults(log, "echo");
  expect(results).toEqual([expect.objectContaining({ isError: true })]);
  expect(results[0]!.text).toMatch(/unknown tool "echo"/);
  expect(toolResults(log).map((r) => r.text)).not.toContain("the filter leaked");
}

describe("a child's tool filter is the intersection of its parent's and its own (semantics.md §2.3)", () => {
  it("HTTP and RPC starts, one-shot and continuable: a child of a session denied echo cannot run it, even when its request allows only echo", async () => {
    const parent = await createSession(DENIED);

    const oneShot = await startOneShot(parent.id, { prompt: callsEcho("one-shot went on") });
    expect((await waitForRun(parent.id, oneShot.runId)).result.output).toEqual([
      { type: "text", text: "one-shot went on" },
    ]);
    expectEchoRefused(await allEvents(oneShot.id));

    // the request's own filter cannot re-allow what the parent's denies: allow [echo] ∩ deny [echo]
    const reallowed = await startOneShot(parent.id, {
      prompt: callsEcho("re-allow went on"),
      toolFilter: { allow: ["echo"] },
    });
    expect((await waitForRun(parent.id, reallowed.runId)).result.output).toEqual([
      { type: "text", text: "re-allow went on" },
    ]);
    expectEchoRefused(await allEvents(reallowed.id));

    const continuable = await startChild(parent.id, { prompt: callsEcho("continuable went on") });
    expectEchoRefused(await waitForTurnEnds(continuable.childId, 1));

    using handle = await rpc.start(parent.id, { provider: "spawn", prompt: callsEcho("rpc went on") });
    expect((await handle.result()).output).toEqual([{ type: "text", text: "rpc went on" }]);
    expectEchoRefused(await allEvents(await handle.id));

    const rpcChild = await rpc.startContinuable(parent.id, {
      provider: "spawn",
      label: "rpc helper",
      prompt: callsEcho("rpc continuable went on"),
    });
    expectEchoRefused(await waitForTurnEnds(rpcChild.childId, 1));

    // the model of such a child is never offered echo (seen in the fake model server's requests)
    const tag = crypto.randomUUID();
    const offered = await startOneShot(parent.id, {
      prompt: `offer probe ${tag}`,
      model: "openai:fake-model",
      toolFilter: { allow: ["echo", "subagent"] },
    });
    await waitForRun(parent.id, offered.runId);
    const [request] = await fakeRequestsMentioning(`offer probe ${tag}`);
    expect(toolNames(request!)).toEqual(["subagent"]);
  });

  it("the model's subagent tool, foreground and background, and a grandchild: none of them can run echo", async () => {
    const parent = await createSession(DENIED);
    const grandchild = callsEcho("grandchild went on");
    const child = script(
      { call: [{ tool: "echo", args: { text: "the filter leaked" } }] },
      { call: [{ tool: "subagent", args: { description: "grandchild", prompt: grandchild } }] },
      { say: "child went on" },
    );
    await sendMessage(
      parent.id,
      script(
        { call: [{ tool: "subagent", args: { description: "foreground", prompt: child } }] },
        {
          call: [
            {
              tool: "subagent",
              args: {
                description: "background",
                prompt: callsEcho("background went on"),
                run_in_background: true,
              },
            },
          ],
        },
        { say: "parent done" },
      ),
    );
    const parentLog = await waitForEvents(
      parent.id,
      (log) =>
        log.filter((e) => e.type === "subagent/start").length >= 2 && log.some((e) => e.type === "turn/end"),
      { what: "both children started and the parent's turn ended" },
    );
    const foreground = startedChildId(parentLog, 0);
    const background = startedChildId(parentLog, 1);
    // the foreground child's answer reached the parent: it ran its grandchild to the end
    expect(toolResults(parentLog, "subagent")[0]).toMatchObject({ isError: false, text: "child went on" });

    const childLog = await waitForTurnEnds(foreground, 1);
    expectEchoRefused(childLog);
    const grandchildLog = await waitForTurnEnds(startedChildId(childLog, 0), 1);
    expectEchoRefused(grandchildLog);
    expect(toolResults(childLog, "subagent")[0]).toMatchObject({
      isError: false,
      text: "grandchild went on",
    });
    expectEchoRefused(await waitForTurnEnds(background, 1));
  });
});
