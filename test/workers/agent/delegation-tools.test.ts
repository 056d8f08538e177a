import { describe, expect, it } from "vitest";
import { api, createSession, sendMessage, uniqueName, view } from "../../support/api";
import {
  assistantTexts,
  count,
  ofType,
  runScript,
  settledTimes,
  toolResults,
  waitForEvents,
} from "../../support/logs";
import { sqlRows } from "../../support/objects";
import { LONG_TURN, script, toolCall } from "../../support/scripts";

/**
 * Delegation from the model (semantics.md §5.7): the `subagent` tool in the foreground and in the
 * background, per `backgroundMode`, and the one-shot background tasks `task_output` and
 * `task_kill` read and stop; results read as §3.3 says.
 */

describe("the subagent tool (semantics.md §5.7, §3.3)", () => {
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

  it("a foreground child's failure is an error tool result with the documented headline and diagnostic", async () => {
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

  it("in one-shot mode the subagent tool runs in the foreground by default; non-completed stop reasons become isError results with their headline and diagnostic; every run is settled and its child idle", async () => {
    const root = await createSession({ backgroundMode: "one-shot" });
    const log = await runScript(
      root.id,
      {
        call: [
          toolCall("subagent", { description: "fine", prompt: "all good" }),
          toolCall("subagent", { description: "long", prompt: script({ stop: "max-tokens" }) }),
          toolCall("subagent", { description: "no", prompt: script({ stop: "refusal" }) }),
          toolCall("subagent", { description: "broken", prompt: script({ fail: "kaput" }) }),
        ],
      },
      { say: "collected" },
    );
    const results = toolResults(log, "subagent");
    const byCall = new Map(results.map((r) => [r.toolCallId, r]));
    const calls = ofType(log, "assistant/message")[0]!.data.toolCalls.map((c: { id: string }) => c.id);
    expect(calls.map((id: string) => [byCall.get(id)!.text, byCall.get(id)!.isError])).toEqual([
      ["echo: all good", false],
      ["Error: subagent hit its token limit before finishing", true],
      ["Error: subagent declined the task", true],
      [expect.stringMatching(/^Error: subagent run failed\nDiagnostic: .*kaput/), true],
    ]);
    expect(ofType(log, "turn/end").at(-1)!.data.reason).toBe("completed");

    const runs = await sqlRows<{ state: string; task_id: string | null; child_id: string }>(
      root.id,
      "SELECT state, task_id, child_id FROM runs",
    );
    expect(runs).toHaveLength(4);
    for (const run of runs) {
      expect(run).toMatchObject({ state: "settled", task_id: null });
      expect(await view(run.child_id)).toMatchObject({ mode: "one-shot", status: "idle" });
    }
    expect(
      ofType(log, "subagent/end")
        .map((e) => e.data.stopReason)
        .sort(),
    ).toEqual(["completed", "error", "max-tokens", "refusal"].sort());
  });

  it("in continuable mode run_in_background:true answers 'started subagent <id>' and creates a continuable child and no task; run_in_background:false runs a foreground one-shot; a provider that cannot continue or cap depth gets no continuable child and no maxDepth", async () => {
    const root = await createSession();
    const log = await runScript(
      root.id,
      {
        call: [
          toolCall("subagent", {
            description: "bg",
            prompt: script({ think: 3000 }, { say: "late" }),
            run_in_background: true,
          }),
        ],
      },
      { call: [toolCall("task_output", { task_id: "subagent-1" })] },
      { call: [toolCall("subagent", { description: "fg", prompt: "in front", run_in_background: false })] },
      { say: "done" },
    );
    const [background, foreground] = toolResults(log, "subagent");
    expect(background!.text).toMatch(/^started subagent [0-9a-f-]{36}$/);
    const childId = background!.text.slice("started subagent ".length);
    expect(await view(childId)).toMatchObject({ mode: "continuable", label: "bg", parentSession: root.id });
    expect(toolResults(log, "task_output")).toEqual([
      expect.objectContaining({ text: 'Error: unknown task "subagent-1"', isError: true }),
    ]);
    expect(foreground).toMatchObject({ text: "echo: in front", isError: false });
    const rows = await sqlRows<{ mode: string; task_id: string | null }>(
      root.id,
      "SELECT c.mode AS mode, r.task_id AS task_id FROM children c LEFT JOIN runs r ON r.child_id = c.child_id ORDER BY c.created_at, c.child_id",
    );
    expect(rows.map((r) => r.mode).sort()).toEqual(["continuable", "one-shot"]);
    expect(rows.every((r) => r.task_id === null)).toBe(true);
    await settledTimes(root.id, childId);

    const name = uniqueName("far");
    expect(
      (
        await api("PUT", `/v1/providers/${name}`, {
          body: { kind: "remote", url: "https://far.example.invalid" },
        })
      ).status,
    ).toBe(201);
    try {
      const remoteRoot = await createSession({ providers: [name] });
      const remoteLog = await runScript(
        remoteRoot.id,
        { call: [toolCall("subagent", { description: "far", prompt: "x", run_in_background: true })] },
        { say: "ok" },
      );
      // a remote provider cannot continue: the background call is a one-shot task there, started
      // without maxDepth (no depthLimit capability); it has no child session here
      const [farResult] = toolResults(remoteLog, "subagent");
      expect(farResult).toMatchObject({
        text: "started background subagent task subagent-1",
        isError: false,
      });
      expect(await sqlRows(remoteRoot.id, "SELECT child_id FROM children")).toEqual([]);
      const [farRun] = await sqlRows<{ run_id: string; local: number }>(
        remoteRoot.id,
        "SELECT run_id, local FROM runs",
      );
      expect(farRun!.local).toBe(0);
      await api("DELETE", `/v1/sessions/${remoteRoot.id}/runs/${farRun!.run_id}`);
    } finally {
      await api("DELETE", `/v1/providers/${name}`);
    }
  });

  // A deliberate deviation (README, "Design choices"): the tool's default stays foreground in every
  // mode, and only an explicit run_in_background: true starts a continuable child.
  it("without run_in_background the subagent tool runs in the foreground even in continuable mode", async () => {
    const root = await createSession();
    const log = await runScript(
      root.id,
      { call: [toolCall("subagent", { description: "default", prompt: "which way" })] },
      { say: "ok" },
    );
    expect(toolResults(log, "subagent")[0]!.text).toBe("echo: which way");
  });
});

describe("background one-shot tasks (semantics.md §5.7)", () => {
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

  it("one-shot background tasks get ids subagent-1, subagent-2; a killed task reads '(no new output)\\n[status: killed]', a finished one its text; a start refused before any child exists consumes no task id", async () => {
    const root = await createSession({ backgroundMode: "one-shot" });
    const log = await runScript(
      root.id,
      {
        call: [
          toolCall("subagent", { description: "slow", prompt: LONG_TURN, run_in_background: true }),
          toolCall("subagent", { description: "quick", prompt: "fast one", run_in_background: true }),
        ],
      },
      { call: [toolCall("task_kill", { task_id: "subagent-1" })] },
      { say: "killed" },
    );
    expect(toolResults(log, "subagent").map((r) => r.text)).toEqual([
      "started background subagent task subagent-1",
      "started background subagent task subagent-2",
    ]);
    expect(toolResults(log, "task_kill").map((r) => r.text)).toEqual([
      "requested cancellation of task subagent-1",
    ]);
    const slow = ofType(log, "subagent/start")[0]!.data.id;
    const slowLog = await waitForEvents(slow, (l) => count(l, "turn/end") === 1);
    expect(ofType(slowLog, "turn/end").map((e) => e.data.reason)).toEqual(["aborted"]);
    await waitForEvents(root.id, (l) => count(l, "subagent/end") === 2);

    const read = await runScript(
      root.id,
      {
        call: [
          toolCall("task_output", { task_id: "subagent-1" }),
          toolCall("task_output", { task_id: "subagent-2" }),
        ],
      },
      { call: [toolCall("task_output", { task_id: "subagent-1" })] },
      { say: "read" },
    );
    expect(toolResults(read, "task_output").map((r) => r.text)).toEqual([
      "(no new output)\n[status: killed]",
      "echo: fast one\n[status: completed]",
      "(no new output)\n[status: killed]",
    ]);

    // preflight: the provider disappears between listing the tools and the call
    const name = uniqueName("vanishing");
    expect((await api("PUT", `/v1/providers/${name}`, { body: { kind: "spawn" } })).status).toBe(201);
    const lonely = await createSession({ backgroundMode: "one-shot", providers: [name] });
    await sendMessage(
      lonely.id,
      script(
        { think: 800 },
        {
          call: [toolCall("subagent", { description: "pre", prompt: "never runs", run_in_background: true })],
        },
        { say: "refused" },
      ),
    );
    await waitForEvents(lonely.id, (l) => count(l, "turn/start") === 1);
    expect((await api("DELETE", `/v1/providers/${name}`)).status).toBe(204);
    const refusedLog = await waitForEvents(lonely.id, (l) => count(l, "turn/end") === 1);
    const [refused] = toolResults(refusedLog, "subagent");
    expect(refused!.isError).toBe(true);
    expect(refused!.text).toMatch(/no provider named|unknown tool/);
    expect(await sqlRows(lonely.id, "SELECT run_id FROM runs")).toEqual([]);
    expect(await sqlRows(lonely.id, "SELECT child_id FROM children")).toEqual([]);
    expect(ofType(refusedLog, "subagent/start")).toEqual([]);

    expect((await api("PUT", `/v1/providers/${name}`, { body: { kind: "spawn" } })).status).toBe(201);
    const again = await runScript(
      lonely.id,
      { call: [toolCall("subagent", { description: "now", prompt: "runs", run_in_background: true })] },
      { say: "ok" },
    );
    expect(toolResults(again, "subagent").map((r) => r.text)).toEqual([
      refused!.text,
      "started background subagent task subagent-1",
    ]);
    await api("DELETE", `/v1/providers/${name}`);
  });

  it("a task killed while its parent's turn keeps stepping is stopped at once: task_output later in the same turn reads killed", async () => {
    const root = await createSession({ backgroundMode: "one-shot" });
    const log = await runScript(
      root.id,
      { call: [toolCall("subagent", { description: "slow", prompt: LONG_TURN, run_in_background: true })] },
      { call: [toolCall("task_kill", { task_id: "subagent-1" })] },
      { think: 1500 },
      { call: [toolCall("task_output", { task_id: "subagent-1" })] },
      { say: "done" },
    );
    expect(toolResults(log, "task_output").map((r) => r.text)).toEqual(["(no new output)\n[status: killed]"]);
  });

  it("a task_kill reason reaches the killed run: the child's aborted turn records it", async () => {
    const root = await createSession({ backgroundMode: "one-shot" });
    const log = await runScript(
      root.id,
      { call: [toolCall("subagent", { description: "slow", prompt: LONG_TURN, run_in_background: true })] },
      { think: 300 },
      { call: [toolCall("task_kill", { task_id: "subagent-1", reason: "no longer needed" })] },
      { say: "killed" },
    );
    const slow = ofType(log, "subagent/start")[0]!.data.id;
    const slowLog = await waitForEvents(slow, (l) => count(l, "turn/end") === 1);
    expect(JSON.stringify(ofType(slowLog, "turn/end")[0]!.data)).toContain("no longer needed");
  });
});
