import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ACP_SESSION_CWD } from "../../../src/providers/acp-protocol";
import { type AcpNet, installAcpAgent } from "../../support/acp-agent";
import { expectNoCredential } from "../../support/remote";
import { api, createSession, putProvider, runOf, startOneShot, waitForRun } from "../../support/api";
import { allEvents, eventually, ofType } from "../../support/logs";
import { sqlRows, stub } from "../../support/objects";

/**
 * The ACP transport (semantics.md §12.4): one-shot runs handed to an external Agent Client Protocol
 * server over a WebSocket (the test agent in test/support/acp-agent.ts): initialize -> session/new ->
 * session/prompt, output from agent_message_chunk, stop reasons mapped, session/cancel on
 * dispose, transport failures as `error` with a diagnostic free of the token.
 */

const TOKEN = "acp-secret-token-0123456789";
let net: AcpNet;
beforeAll(() => {
  net = installAcpAgent();
});
afterAll(() => net.restore());

async function registerAcp(url = "wss://agent.acp.test/acp", token: string | null = TOKEN): Promise<string> {
  const name = `acp-${crypto.randomUUID().slice(0, 8)}`;
  const res = await putProvider(name, { kind: "acp", url, ...(token === null ? {} : { token }) });
  expect(res.status).toBe(201);
  return name;
}

/** Waits until the agent got a prompt (the "hold" prompt keeps it running). */
async function heldPrompt(): Promise<void> {
  await eventually(
    async () => net.connections.some((c) => c.received.some((m) => m.method === "session/prompt")),
    (got) => got,
    { timeoutMs: 5_000, intervalMs: 20, what: "the agent to get the prompt" },
  );
}

describe("the ACP transport (semantics.md §12.4)", () => {
  it("registers as an out-of-process provider and refuses start capabilities", async () => {
    const name = await registerAcp();
    const listed = (await api("GET", "/v1/providers")).body as { providers?: any[] } | any[];
    const all = Array.isArray(listed) ? listed : (listed.providers ?? []);
    const info = all.find((p: any) => p.name === name);
    expect(info).toMatchObject({
      kind: "acp",
      local: false,
      continuable: false,
      inheritsParentContext: false,
      capabilities: { outputSchema: false, depthLimit: false, toolFilter: false, persona: false },
    });
    expect(JSON.stringify(info)).not.toContain(TOKEN);
    const parent = await createSession();
    for (const option of [
      { outputSchema: { type: "object" } },
      { maxDepth: 1 },
      { toolFilter: { allow: ["echo"] } },
      { persona: "x" },
    ]) {
      const res = await api("POST", `/v1/sessions/${parent.id}/subagents`, {
        body: { provider: name, prompt: "hi", mode: "one-shot", ...option },
      });
      expect(res.status).toBe(422);
      expect(JSON.stringify(res.body)).toContain("UNSUPPORTED_CAPABILITY");
    }
    for (const url of ["ws://example.com/acp", "ftp://agent.acp.test", "not a url"]) {
      const res = await api("PUT", "/v1/providers/acp-bad", { body: { kind: "acp", url } });
      expect(res.status).toBe(400);
    }
  });

  it("runs initialize -> session/new -> session/prompt and completes with the streamed output", async () => {
    const provider = await registerAcp();
    const parent = await createSession();
    const before = net.connections.length;
    const runId = (await startOneShot(parent.id, { provider, prompt: "hello agent" })).runId;
    const run = await waitForRun(parent.id, runId);
    expect(run).toMatchObject({
      id: `acp:${runId}`,
      local: false,
      provider,
      counterpart: { kind: "acp", id: "sess-1" },
    });
    expect(run.result).toEqual({
      output: [{ type: "text", text: "echo: hello agent" }],
      stopReason: "completed",
    });
    const agent = net.connections[before]!;
    expect(agent.auth).toBe(`Bearer ${TOKEN}`);
    expect(agent.received.map((m) => m.method)).toEqual(["initialize", "session/new", "session/prompt"]);
    expect(agent.received[0]!.params).toMatchObject({ protocolVersion: 1 });
    // the runtime names no directory of its own: the agent's side decides (the bridge's --cwd)
    expect(agent.received[1]!.params).toEqual({ cwd: ACP_SESSION_CWD, mcpServers: [] });
    expect(agent.received[2]!.params).toEqual({
      sessionId: "sess-1",
      prompt: [{ type: "text", text: "hello agent" }],
    });
    const events = await allEvents(parent.id);
    expect(ofType(events, "subagent/start")[0]!.data).toMatchObject({
      runId,
      local: false,
      id: `acp:${runId}`,
    });
    expect(ofType(events, "subagent/end")[0]!.data).toMatchObject({ runId, stopReason: "completed" });
    // the agent's session id, recorded between the start and the end for transcripts and listings
    const counterpart = ofType(events, "subagent/remote");
    expect(counterpart.map((e) => e.data)).toEqual([{ runId, kind: "acp", remoteId: "sess-1" }]);
    const seqOf = (type: string) => events.find((e) => e.type === type)!.seq;
    expect(seqOf("subagent/start")).toBeLessThan(counterpart[0]!.seq);
    expect(counterpart[0]!.seq).toBeLessThan(seqOf("subagent/end"));
    expect((await api("GET", `/v1/sessions/${parent.id}`)).body).toMatchObject({ status: "idle" });
    // the token lives in the run's acp_runs row (to reconnect) and nowhere else
    await expectNoCredential(parent.id, [TOKEN]);
    expect((await sqlRows(parent.id, "SELECT token FROM acp_runs WHERE run_id = ?", runId))[0]).toEqual({
      token: TOKEN,
    });
  });

  it("maps max_tokens to max-tokens (partial output kept), refusal to refusal, an unknown reason to error", async () => {
    const provider = await registerAcp();
    const parent = await createSession();
    const long = (await startOneShot(parent.id, { provider, prompt: "be long" })).runId;
    const refuse = (await startOneShot(parent.id, { provider, prompt: "refuse" })).runId;
    const odd = (await startOneShot(parent.id, { provider, prompt: "odd" })).runId;
    expect((await waitForRun(parent.id, long)).result).toEqual({
      output: [{ type: "text", text: "partial" }],
      stopReason: "max-tokens",
    });
    expect((await waitForRun(parent.id, refuse)).result).toEqual({ output: [], stopReason: "refusal" });
    const error = (await waitForRun(parent.id, odd)).result;
    expect(error.stopReason).toBe("error");
    expect(error.diagnostic).toBe("the ACP agent ended with stop reason exploded");
  });

  it("sends session/cancel on dispose and ends the run aborted", async () => {
    const provider = await registerAcp();
    const parent = await createSession();
    const before = net.connections.length;
    const runId = (await startOneShot(parent.id, { provider, prompt: "hold" })).runId;
    await heldPrompt();
    expect((await runOf(parent.id, runId)).state).toBe("running");
    const res = await api("DELETE", `/v1/sessions/${parent.id}/runs/${runId}`);
    expect(res.status).toBeLessThan(300);
    const run = await waitForRun(parent.id, runId);
    expect(run.result.stopReason).toBe("aborted");
    expect(run.result.output).toEqual([{ type: "text", text: "working" }]);
    const agent = net.connections[before]!;
    expect(agent.received.map((m) => m.method)).toContain("session/cancel");
    expect(agent.received.find((m) => m.method === "session/cancel")!.params).toEqual({
      sessionId: "sess-1",
    });
  });

  it("tries an agent it could not reach again (no answer, 5xx), as if the run had not started, up to 5 times", async () => {
    // the first two upgrades to this host fail before the agent sees them: no answer, then a 503
    const real = globalThis.fetch;
    let upgrades = 0;
    let downUpgrades = 0;
    globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.hostname === "down.acp.test") downUpgrades++;
      if (url.hostname !== "flaky.acp.test") return real(input, init);
      upgrades++;
      if (upgrades === 1) throw new TypeError("Network connection lost.");
      if (upgrades === 2) return new Response("busy", { status: 503 });
      return real(input, init);
    }) as typeof fetch;
    try {
      const parent = await createSession();
      const provider = await registerAcp("wss://flaky.acp.test/acp");
      const before = net.connections.length;
      const { runId } = await startOneShot(parent.id, { provider, prompt: "third time" });
      const run = await waitForRun(parent.id, runId);
      expect(run.result).toEqual({
        output: [{ type: "text", text: "echo: third time" }],
        stopReason: "completed",
      });
      expect(upgrades).toBe(3);
      // the agent saw one connection and one prompt
      const seen = net.connections.slice(before);
      expect(seen.map((c) => c.received.filter((m) => m.method === "session/prompt").length)).toEqual([1]);
      const log = await allEvents(parent.id);
      expect(ofType(log, "subagent/start")).toHaveLength(1);
      expect(ofType(log, "subagent/end").map((e) => e.data.stopReason)).toEqual(["completed"]);

      // an agent that never answers is given up after five attempts
      const gone = await startOneShot(parent.id, {
        provider: await registerAcp("https://down.acp.test/acp"),
        prompt: "hi",
      });
      const ended = await waitForRun(parent.id, gone.runId);
      expect(ended.result.stopReason).toBe("error");
      expect(downUpgrades).toBe(5);
      expect(ended.result.diagnostic).toMatch(/the upgrade was refused: HTTP 503/);
    } finally {
      globalThis.fetch = real;
    }
  });

  it("turns a broken agent into error with a bounded diagnostic that never holds the token", async () => {
    const parent = await createSession();
    const broken = (await startOneShot(parent.id, { provider: await registerAcp(), prompt: "break" })).runId;
    const hungUp = (await startOneShot(parent.id, { provider: await registerAcp(), prompt: "hang up" }))
      .runId;
    const down = (
      await startOneShot(parent.id, {
        provider: await registerAcp("https://down.acp.test/acp"),
        prompt: "hi",
      })
    ).runId;
    const unreachable = (
      await startOneShot(parent.id, { provider: await registerAcp("http://127.0.0.1:9/acp"), prompt: "hi" })
    ).runId;
    const results = await Promise.all(
      [broken, hungUp, down, unreachable].map(async (id) => (await waitForRun(parent.id, id)).result),
    );
    for (const result of results) {
      expect(result.stopReason).toBe("error");
      expect(typeof result.diagnostic).toBe("string");
      expect(result.diagnostic.length).toBeLessThanOrEqual(2_000);
      expect(result.diagnostic).not.toContain(TOKEN);
    }
    expect(results[0].diagnostic).toMatch(
      /^the ACP agent at wss:\/\/agent\.acp\.test: session\/prompt failed: JSON-RPC error -32603: internal: Bearer \[redacted\]$/,
    );
    expect(results[1].diagnostic).toMatch(/the connection closed \(code 1011\)/);
    expect(results[2].diagnostic).toMatch(/the upgrade was refused: HTTP 503/);
    expect(results[3].diagnostic).toMatch(/no answer/);
    expect(JSON.stringify(await allEvents(parent.id))).not.toContain(TOKEN);
  });

  /**
   * A WebSocket cannot outlive its object, and the test runtime cannot evict an object holding
   * one; so the state an eviction leaves is made directly: the run, once done, is made running
   * again with its result forgotten, and the object evicted without a connection.
   */
  async function restartMidRun(parentId: string, runId: string): Promise<void> {
    await waitForRun(parentId, runId);
    await sqlRows(parentId, "UPDATE runs SET state = 'running', result = NULL WHERE run_id = ?", runId);
    await sqlRows(parentId, "DELETE FROM seen WHERE envelope_id = ?", `result:${runId}`);
    await evictDurableObject(stub(parentId));
    expect((await runOf(parentId, runId)).state).toBe("running");
    await runDurableObjectAlarm(stub(parentId));
  }

  it("ends a run as error when its object restarts and the agent cannot resume (no session/load)", async () => {
    const provider = await registerAcp();
    const parent = await createSession();
    const runId = (await startOneShot(parent.id, { provider, prompt: "hello" })).runId;
    const before = net.connections.length;
    await restartMidRun(parent.id, runId);
    const run = await waitForRun(parent.id, runId);
    expect(run.result).toEqual({
      output: [],
      stopReason: "error",
      diagnostic:
        "connection lost: the session restarted while the ACP agent was running, and the agent cannot resume its session (it does not offer session/load)",
    });
    expect(net.connections.length).toBe(before); // nothing was reopened
  });

  it("resumes the agent's session with session/load after its object restarted, and learns one result", async () => {
    const provider = await registerAcp("wss://load.acp.test/acp");
    const parent = await createSession();
    const runId = (await startOneShot(parent.id, { provider, prompt: "hello again" })).runId;
    await waitForRun(parent.id, runId);
    const first = net.connections.length - 1;
    const sessionId = (net.connections[first]!.received[2]!.params as { sessionId: string }).sessionId;
    await restartMidRun(parent.id, runId);
    const run = await waitForRun(parent.id, runId);
    // the replayed history ("echo: hello again" of the first connection) is not output twice
    expect(run.result).toEqual({
      output: [{ type: "text", text: "echo: hello again" }],
      stopReason: "completed",
    });
    const resumed = net.connections[first + 1]!;
    // an agent that outlived the old connection is told to stop the old prompt before the new one
    expect(resumed.received.map((m) => m.method)).toEqual([
      "initialize",
      "session/load",
      "session/cancel",
      "session/prompt",
    ]);
    expect(resumed.received[1]!.params).toEqual({ sessionId, cwd: ACP_SESSION_CWD, mcpServers: [] });
    expect(resumed.received[3]!.params).toEqual({
      sessionId,
      prompt: [{ type: "text", text: "hello again" }],
    });
    expect(resumed.auth).toBe(`Bearer ${TOKEN}`);
    const events = await allEvents(parent.id);
    // one counterpart (the same session: a resume records none), and after the first run's end
    // (made unsettled by the test) exactly one more
    expect(ofType(events, "subagent/remote").map((e) => (e.data as any).remoteId)).toEqual([sessionId]);
    expect(ofType(events, "subagent/end").filter((e) => (e.data as any).runId === runId)).toHaveLength(2);
  });

  it("resumes a run a bounded number of times, then ends it as error", async () => {
    const provider = await registerAcp("wss://load.acp.test/acp");
    const parent = await createSession();
    const runId = (await startOneShot(parent.id, { provider, prompt: "again and again" })).runId;
    const before = net.connections.length;
    for (let i = 0; i < 4; i++) await restartMidRun(parent.id, runId);
    const run = await waitForRun(parent.id, runId);
    expect(run.result).toEqual({
      output: [],
      stopReason: "error",
      diagnostic:
        "connection lost: the session restarted while the ACP agent was running, 3 times; it is not resumed again",
    });
    expect(net.connections.length - before).toBe(3);
  });
});
