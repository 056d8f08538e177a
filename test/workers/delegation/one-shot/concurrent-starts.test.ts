import { afterEach, describe, expect, it } from "vitest";
import { REGISTRY_FAULT_SCOPE } from "../../../../src/core/faults";
import { api, createSession } from "../../../support/api";
import { deferred, faults, removeAllFaults } from "../../../support/faults";
import { assistantTexts, ofType, waitForTurnEnds } from "../../../support/logs";
import { script, spawnCall } from "../../../support/scripts";

/**
 * The `subagent` calls of one model step start their children side by side (issue: a fan-out of
 * 100 paid every start one after another before the last child began), and the step's results
 * are still recorded in the order of the calls. Each start looks its provider up in the registry
 * object; holding those lookups shows how many starts are in flight at once.
 */

afterEach(() => removeAllFaults());

/** A foreground `subagent` call: a one-shot child whose answer is the call's result. */
const foreground = (prompt: string) => ({ tool: "subagent", args: { description: prompt, prompt } });

describe("one model step's subagent calls", () => {
  it("start their children side by side, and record their results in call order", async () => {
    const parent = await createSession();
    // every registry call after the first (the step's provider list) waits at the gate
    const gate = deferred();
    const registry = faults(REGISTRY_FAULT_SCOPE, (point, n) =>
      point === "in-registry" && n >= 2 ? gate.promise : undefined,
    );
    const sent = await api("POST", `/v1/sessions/${parent.id}/messages`, {
      body: {
        content: script(
          { call: ["a", "b", "c"].map((x) => foreground(`task ${x}`)) },
          { say: "all three done" },
        ),
      },
    });
    expect(sent.status).toBe(202);
    // three provider lookups wait at once: the three starts are in flight together
    await registry.reached("in-registry", 4);
    gate.resolve();

    const log = await waitForTurnEnds(parent.id, 1);
    const results = ofType(log, "tool/result").map((e) => ({
      id: e.data.toolCallId,
      text: e.data.content.map((b: { text: string }) => b.text).join(""),
    }));
    expect(results).toEqual([
      { id: "call_0_0_0", text: "echo: task a" },
      { id: "call_0_0_1", text: "echo: task b" },
      { id: "call_0_0_2", text: "echo: task c" },
    ]);
    expect(ofType(log, "subagent/start")).toHaveLength(3);
    expect(ofType(log, "subagent/end")).toHaveLength(3);
    expect(assistantTexts(log).at(-1)).toBe("all three done");
  });

  it("run a tool that is not concurrent only after the concurrent calls before it started", async () => {
    const parent = await createSession();
    const sent = await api("POST", `/v1/sessions/${parent.id}/messages`, {
      body: {
        content: script(
          {
            call: [
              spawnCall("task x", "task x"),
              { tool: "list_agents", args: {} },
              spawnCall("task y", "task y"),
            ],
          },
          { say: "listed" },
        ),
      },
    });
    expect(sent.status).toBe(202);
    const log = await waitForTurnEnds(parent.id, 1);
    const results = ofType(log, "tool/result");
    expect(results.map((e) => e.data.name)).toEqual(["subagent", "list_agents", "subagent"]);
    // the listing ran after the first start was made (it sees that child), not before
    const startedFirst = ofType(log, "subagent/start")[0]!.data.id as string;
    expect(JSON.stringify(results[1]!.data.content)).toContain(startedFirst);
  });
});
