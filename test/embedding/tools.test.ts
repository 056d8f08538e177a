import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { agents, createSession, events, results, script, testEnv, turn, waitFor } from "./support";

/** The embedding Worker's tools (defineTool) in its sessions and their children (docs/embedding.md). */

function call(tool: string, args: Record<string, unknown> = {}): unknown {
  return { call: [{ tool, args }] };
}

describe("a Worker's tools run in its sessions", () => {
  it("give run the parsed input, the Worker's env, the session id, a call key and a signal", async () => {
    const { id } = await createSession();
    const log = await turn(id, script(call("probe", { note: "hi" }), { say: "done" }));
    const [result] = results(log);
    expect(result).toMatchObject({ name: "probe", isError: false });
    const seen = JSON.parse(result!.text);
    const toolCallId = log.find((e) => e.type === "assistant/message")!.data.toolCalls[0].id;
    expect(seen).toEqual({
      note: "hi",
      sessionId: id,
      callKey: `${id}/1:${toolCallId}`,
      toolCallId,
      aborted: false,
      kv: "function",
    });
    // the tool really wrote through the Worker's KV binding
    expect(JSON.parse((await testEnv.STORE.get(`seen:${seen.callKey}`))!)).toEqual(seen);
    expect(log.at(-1)!.data).toEqual({ turn: 1, reason: "completed" });
  });

  it("turn invalid arguments, a throw, a wrong result and a timeout into error results; the turn goes on", async () => {
    const { id } = await createSession();
    const log = await turn(
      id,
      script(
        {
          call: [
            { tool: "probe", args: { note: 7 } },
            { tool: "explode", args: {} },
          ],
        },
        {
          call: [
            { tool: "wrong_result", args: {} },
            { tool: "slow", args: {} },
          ],
        },
        call("rich"),
        call("rich", { fail: true }),
        { say: "still here" },
      ),
    );
    const answered = results(log);
    expect(answered.map((r) => [r.name, r.isError])).toEqual([
      ["probe", true],
      ["explode", true],
      ["wrong_result", true],
      ["slow", true],
      ["rich", false],
      ["rich", true],
    ]);
    expect(answered[0]!.text).toMatch(/^Error: invalid arguments for probe: note: /);
    expect(answered[1]!.text).toBe("Error: boom in the tool");
    expect(answered[2]!.text).toBe("Error: the tool returned neither a string nor { content }");
    expect(answered[3]!.text).toBe("Error: slow timed out after 200 ms");
    expect(answered[4]!.text).toBe("part one, part two");
    expect(log.at(-1)!.data).toEqual({ turn: 1, reason: "completed" });
    // the late answer of the timed-out call never lands
    await new Promise((r) => setTimeout(r, 100));
    expect(results(await events(id))).toHaveLength(6);
  });

  it("abort a running call's signal on interrupt", async () => {
    const { id } = await createSession();
    const sent = await agents("POST", `/v1/sessions/${id}/messages`, {
      body: { content: script(call("wait_for_abort"), { say: "never" }) },
    });
    expect(sent.status).toBe(202);
    const running = await waitFor(id, (log) => log.some((e) => e.type === "assistant/message"));
    const toolCallId = running.find((e) => e.type === "assistant/message")!.data.toolCalls[0].id;
    expect((await agents("POST", `/v1/sessions/${id}/interrupt`)).status).toBe(202);
    const log = await waitFor(id, (l) => l.some((e) => e.type === "turn/end"));
    expect(log.find((e) => e.type === "turn/end")!.data).toMatchObject({ reason: "aborted", cause: "user" });
    const callKey = `${id}/1:${toolCallId}`;
    for (let i = 0; i < 50 && (await testEnv.STORE.get(`aborted:${callKey}`)) === null; i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(await testEnv.STORE.get(`aborted:${callKey}`)).toBe("Error: interrupted (user)");
  });

  it("run a call again with the same call key after a crash during it (at-least-once)", async () => {
    const { id } = await createSession();
    const sent = await agents("POST", `/v1/sessions/${id}/messages`, {
      body: { content: script(call("park_first_run"), { say: "after the re-run" }) },
    });
    expect(sent.status).toBe(202);
    const running = await waitFor(id, (log) => log.some((e) => e.type === "assistant/message"));
    const toolCallId = running.find((e) => e.type === "assistant/message")!.data.toolCalls[0].id;
    const callKey = `${id}/1:${toolCallId}`;
    for (let i = 0; i < 50 && (await testEnv.STORE.get(`runs:${callKey}`)) === null; i++)
      await new Promise((r) => setTimeout(r, 20));
    // the first run is parked inside the object: crash it there
    const stub = testEnv.AGENT_SESSIONS.get(testEnv.AGENT_SESSIONS.idFromName(id));
    await runInDurableObject(stub, (_instance: unknown, state: DurableObjectState) => {
      state.abort("crashed during the tool call");
    }).catch(() => {});
    const log = await waitFor(id, (l) => l.some((e) => e.type === "turn/end"), 15_000);
    expect(results(log)).toEqual([{ name: "park_first_run", text: `run 2 of ${callKey}`, isError: false }]);
    expect(await testEnv.STORE.get(`runs:${callKey}`)).toBe("2");
    expect(log.at(-1)!.data).toEqual({ turn: 1, reason: "completed" });
  });
});

describe("a crash that repeats during a tool call", () => {
  it("runs the call at most 3 times, then answers it with an error and the turn goes on", async () => {
    const { id } = await createSession();
    await agents("POST", `/v1/sessions/${id}/messages`, {
      body: { content: script(call("park_every_run"), { say: "went on without it" }) },
    });
    const running = await waitFor(id, (log) => log.some((e) => e.type === "assistant/message"));
    const toolCallId = running.find((e) => e.type === "assistant/message")!.data.toolCalls[0].id;
    const callKey = `${id}/1:${toolCallId}`;
    for (let run = 1; run <= 3; run++) {
      for (let i = 0; i < 500 && Number(await testEnv.STORE.get(`runs:${callKey}`)) < run; i++) {
        await events(id); // wakes the object after the last crash
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(Number(await testEnv.STORE.get(`runs:${callKey}`))).toBe(run);
      // the object crashes while the call runs (a fresh stub: one that reached a crashed object is broken)
      const stub = testEnv.AGENT_SESSIONS.get(testEnv.AGENT_SESSIONS.idFromName(id));
      await runInDurableObject(stub, (_instance: unknown, state: DurableObjectState) => {
        state.abort(`crash ${run} during the tool call`);
      }).catch(() => {});
    }
    const log = await waitFor(id, (l) => l.some((e) => e.type === "turn/end"), 15_000);
    expect(results(log)).toEqual([
      {
        name: "park_every_run",
        text: "Error: the call was cut short by a restart of the session 3 times; it is not run again",
        isError: true,
      },
    ]);
    expect(await testEnv.STORE.get(`runs:${callKey}`)).toBe("3");
    expect(log.at(-1)!.data).toEqual({ turn: 1, reason: "completed" });
    expect(log.filter((e) => e.type === "assistant/message").at(-1)!.data.content).toEqual([
      { type: "text", text: "went on without it" },
    ]);
  });
});

describe("a Worker's tools under tool filters and in children", () => {
  it("hides a denied tool (a call to it is an unknown tool) and refuses a filter naming no tool", async () => {
    const { id } = await createSession({ toolFilter: { deny: ["probe"] } });
    const log = await turn(id, script(call("probe", { note: "x" }), { say: "done" }));
    expect(results(log)).toEqual([{ name: "probe", text: 'Error: unknown tool "probe"', isError: true }]);
    const refused = await agents("POST", "/v1/sessions", {
      body: { toolFilter: { allow: ["probe", "nope"] } },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/toolFilter names unknown tools: "nope"/);
  });

  it("offers them to children, whose calls carry the child's own session id", async () => {
    const { id } = await createSession();
    const childPrompt = script(call("probe", { note: "from the child" }), { say: "child done" });
    const log = await turn(
      id,
      script(
        { call: [{ tool: "subagent", args: { description: "probe", prompt: childPrompt } }] },
        { say: "ok" },
      ),
    );
    expect(log.find((e) => e.type === "subagent/end")!.data.stopReason).toBe("completed");
    const children = await agents("GET", `/v1/sessions/${id}/children`);
    const childId = children.body.entries[0].id;
    const childLog = await waitFor(childId, (l) => l.some((e) => e.type === "turn/end"));
    const seen = JSON.parse(results(childLog)[0]!.text);
    expect(seen).toMatchObject({ note: "from the child", sessionId: childId });
    expect(seen.callKey).toMatch(new RegExp(`^${childId}/1:`));
  });
});
