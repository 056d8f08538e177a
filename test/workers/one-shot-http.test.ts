import { describe, expect, it } from "vitest";
import { api, createSession } from "../support/api";
import { assistantTexts, waitForEvents } from "../support/logs";
import { script } from "../support/scripts";

describe("one-shot delegation over HTTP", () => {
  it("starts a spawn child, records start before end, and returns its result by long-poll", async () => {
    const parent = await createSession();
    const started = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "spawn", prompt: "hi", mode: "one-shot", label: "greet" },
    });
    expect(started.status).toBe(201);
    expect(started.body).toEqual({ runId: expect.any(String), id: expect.any(String), local: true });
    const { runId, id } = started.body;
    const run = await api("GET", `/v1/sessions/${parent.id}/runs/${runId}?wait=5000`);
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ runId, id, provider: "spawn", local: true, state: "settled" });
    expect(run.body.result).toEqual({
      output: [{ type: "text", text: "echo: hi" }],
      stopReason: "completed",
    });
    const events = await waitForEvents(parent.id, (es) => es.some((e) => e.type === "subagent/end"));
    const lifecycle = events.filter((e) => e.type.startsWith("subagent/"));
    expect(lifecycle.map((e) => e.type)).toEqual(["subagent/start", "subagent/end"]);
    expect(lifecycle[0]!.data).toEqual({ runId, provider: "spawn", id, local: true });
    expect(lifecycle[1]!.data).toEqual({
      runId,
      provider: "spawn",
      id,
      local: true,
      stopReason: "completed",
      lastAssistantMessage: [{ type: "text", text: "echo: hi" }],
    });
    const child = await api("GET", `/v1/sessions/${id}`);
    expect(child.body).toMatchObject({
      id,
      parentSession: parent.id,
      origin: "subagent",
      delegationDepth: 1,
      mode: "one-shot",
      label: "greet",
    });
  });

  it("lets the model delegate in the foreground and answer with the child's text", async () => {
    const parent = await createSession();
    const content = script(
      { call: [{ tool: "subagent", args: { description: "count", prompt: script({ say: "42" }) } }] },
      { say: "done" },
    );
    await api("POST", `/v1/sessions/${parent.id}/messages`, { body: { content } });
    const events = await waitForEvents(parent.id, (es) => es.some((e) => e.type === "turn/end"));
    const result = events.find((e) => e.type === "tool/result");
    expect(result!.data).toMatchObject({
      name: "subagent",
      isError: false,
      content: [{ type: "text", text: "42" }],
    });
    expect(assistantTexts(events).at(-1)).toBe("done");
    expect(events.filter((e) => e.type === "subagent/start")).toHaveLength(1);
    expect(events.filter((e) => e.type === "subagent/end")).toHaveLength(1);
  });
});
