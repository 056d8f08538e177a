import { describe, expect, it } from "vitest";
import { api, createSession } from "../../support/api";
import { waitForEvents } from "../../support/logs";
import { script } from "../../support/scripts";

describe("the step budget of a turn (semantics.md §2.4)", () => {
  it("ends a turn that keeps calling tools as error after MAX_STEPS_PER_TURN model calls, and the session goes on", async () => {
    const { id } = await createSession();
    const steps = Array.from({ length: 70 }, (_, i) => ({
      call: [{ tool: "echo", args: { text: `step ${i}` } }],
    }));
    await api("POST", `/v1/sessions/${id}/messages`, {
      body: { content: script(...steps) },
    });
    const events = await waitForEvents(id, (es) => es.some((e) => e.type === "turn/end"));
    const end = events.find((e) => e.type === "turn/end");
    expect(end!.data).toEqual({ turn: 1, reason: "error", error: "step budget of 64 exhausted" });
    expect(events.filter((e) => e.type === "assistant/message")).toHaveLength(64);
    await api("POST", `/v1/sessions/${id}/messages`, { body: { content: "still here" } });
    const after = await waitForEvents(id, (es) => es.filter((e) => e.type === "turn/end").length === 2);
    expect(after.at(-2)!.data.content[0].text).toBe("echo: still here");
  });
});
