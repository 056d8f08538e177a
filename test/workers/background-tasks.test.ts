import { describe, expect, it } from "vitest";
import { api, createSession, sendMessage } from "../support/api";
import { toolResults, waitForEvents } from "../support/logs";
import { script } from "../support/scripts";

describe("background one-shot tasks", () => {
  it("returns subagent-1 at once, and task_output reads the result once the child settled", async () => {
    const parent = await createSession({ backgroundMode: "one-shot" });
    const child = script({ say: "forty-two" });
    await sendMessage(
      parent.id,
      script(
        { call: [{ tool: "subagent", args: { description: "bg", prompt: child, run_in_background: true } }] },
        { say: "started" },
      ),
    );
    await waitForEvents(parent.id, (es) => es.some((e) => e.type === "subagent/end"));
    await sendMessage(
      parent.id,
      script({ call: [{ tool: "task_output", args: { task_id: "subagent-1" } }] }, { say: "read" }),
    );
    const events = await waitForEvents(
      parent.id,
      (es) => es.filter((e) => e.type === "turn/end").length === 2,
    );
    expect(toolResults(events).map((r) => r.text)).toEqual([
      "started background subagent task subagent-1",
      "forty-two\n[status: completed]",
    ]);
  });

  it("task_kill cancels a running task, which then reads as killed; ids count up per session", async () => {
    const parent = await createSession({ backgroundMode: "one-shot" });
    const slow = script({ think: 10_000 }, { say: "never" });
    await sendMessage(
      parent.id,
      script(
        {
          call: [
            { tool: "subagent", args: { description: "a", prompt: slow, run_in_background: true } },
            { tool: "subagent", args: { description: "b", prompt: slow, run_in_background: true } },
          ],
        },
        { call: [{ tool: "task_kill", args: { task_id: "subagent-2" } }] },
        { say: "killed" },
      ),
    );
    const ended = await waitForEvents(parent.id, (es) => es.some((e) => e.type === "subagent/end"));
    const end = ended.find((e) => e.type === "subagent/end");
    expect(end!.data.stopReason).toBe("aborted");
    expect(end!.data).not.toHaveProperty("lastAssistantMessage");
    await sendMessage(
      parent.id,
      script(
        {
          call: [
            { tool: "task_output", args: { task_id: "subagent-2" } },
            { tool: "task_output", args: { task_id: "subagent-1" } },
          ],
        },
        { say: "ok" },
      ),
    );
    const events = await waitForEvents(
      parent.id,
      (es) => es.filter((e) => e.type === "turn/end").length === 2,
    );
    expect(toolResults(events).map((r) => r.text)).toEqual([
      "started background subagent task subagent-1",
      "started background subagent task subagent-2",
      "requested cancellation of task subagent-2",
      "(no new output)\n[status: killed]",
      "(no new output)\n[status: running]",
    ]);
    const status = await api("GET", `/v1/sessions/${parent.id}`);
    expect(status.body.status).toBe("waiting");
  });

  it("a foreground child's failure is an error tool result with the contract's headline", async () => {
    const parent = await createSession({ backgroundMode: "one-shot" });
    await sendMessage(
      parent.id,
      script(
        {
          call: [
            { tool: "subagent", args: { description: "f", prompt: script({ fail: "model exploded" }) } },
          ],
        },
        { say: "after" },
      ),
    );
    const events = await waitForEvents(parent.id, (es) => es.some((e) => e.type === "turn/end"));
    const result = events.find((e) => e.type === "tool/result");
    expect(result!.data.isError).toBe(true);
    expect(result!.data.content[0].text).toBe("Error: subagent run failed\nDiagnostic: model exploded");
  });
});
