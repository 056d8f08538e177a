import { describe, expect, it } from "vitest";
import { ADMIN, createSession, workerFetch } from "../../support/api";
import { allEvents, eventually } from "../../support/logs";
import { script } from "../../support/scripts";
import { connectMcpFace } from "../../support/mcp-face";
import { jsonRpcAnswer, mcpPath, postJsonRpc } from "../../support/json-rpc";

/**
 * The MCP server face (docs/semantics.md §14): POST /v1/sessions/:id/mcp driven by the
 * official MCP TypeScript SDK's own client over Streamable HTTP, and by raw JSON-RPC for the 2025
 * `initialize` revisions and for bad input.
 */

function textOf(result: { content?: unknown }): string {
  return ((result.content as { type: string; text?: string }[]) ?? []).map((c) => c.text ?? "").join("");
}

/** One raw JSON-RPC POST to the MCP endpoint, as a 2025-era client sends it. */
const rpc = (id: string, body: unknown, token: string | null = ADMIN, raw?: string): Promise<Response> =>
  postJsonRpc(mcpPath(id), raw ?? JSON.stringify(body), { token });

const answerOf = jsonRpcAnswer;

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

describe("a session's tools over MCP (docs/semantics.md §14)", () => {
  it("lists the session's tools as its model sees them, with the session token and with the admin token", async () => {
    const { id, token } = await createSession({ toolFilter: { deny: ["task_kill"] } });
    for (const bearer of [token, ADMIN]) {
      const client = await connectMcpFace(id, bearer);
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(
        expect.arrayContaining([
          "echo",
          "subagent",
          "subagent_fork",
          "send_message",
          "interrupt_agent",
          "list_agents",
          "task_output",
        ]),
      );
      expect(names).not.toContain("task_kill"); // the session's tool filter
      expect(names).not.toContain("report");
      expect(names).not.toContain("structured_output");
      const subagent = (await client.listTools()).tools.find((t) => t.name === "subagent")!;
      expect(subagent.inputSchema.properties).toHaveProperty("prompt");
      await client.close();
    }
  });

  it("calls a tool and records the call and its result in the log, marked as MCP's", async () => {
    const { id, token } = await createSession();
    const client = await connectMcpFace(id, token);
    const result = await client.callTool({ name: "echo", arguments: { text: "over mcp" } });
    expect(textOf(result)).toBe("over mcp");
    expect(result.isError).toBeFalsy();
    const log = await allEvents(id);
    const call = log.find((e) => e.type === "mcp/call");
    const answer = log.find((e) => e.type === "mcp/result");
    expect(call?.data).toMatchObject({ name: "echo", args: { text: "over mcp" } });
    expect(answer?.data).toEqual({
      callId: call?.data.callId,
      name: "echo",
      content: [{ type: "text", text: "over mcp" }],
      isError: false,
    });
    // no turn ran for it
    expect(log.some((e) => e.type === "turn/start")).toBe(false);
    await client.close();
  });

  it("answers a foreground subagent call with the child's result, and starts a background child whose output a new connection reads", async () => {
    const { id, token } = await createSession({ backgroundMode: "one-shot" });
    const first = await connectMcpFace(id, token);
    const foreground = await first.callTool({
      name: "subagent",
      arguments: { description: "fg", prompt: script({ say: "the child's answer" }) },
    });
    expect(textOf(foreground)).toContain("the child's answer");
    expect(foreground.isError).toBeFalsy();

    const background = await first.callTool({
      name: "subagent",
      arguments: {
        description: "bg",
        prompt: script({ think: 200 }, { say: "done later" }),
        run_in_background: true,
      },
    });
    const taskId = /started background subagent task (\S+)/.exec(textOf(background))?.[1];
    expect(taskId).toBeDefined();
    await first.close();

    // a later connection reads the finished task's output
    const later = await connectMcpFace(id, token);
    const output = await eventually(
      async () => textOf(await later.callTool({ name: "task_output", arguments: { task_id: taskId } })),
      (text) => text.includes("done later"),
      { what: "the background task's output" },
    );
    expect(output).toContain("done later");
    // both children are the session's, in its listing
    const children = await workerFetch(
      new Request(`http://example.com/v1/sessions/${id}/descendants`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      }),
    );
    expect(((await children.json()) as { entries: unknown[] }).entries).toHaveLength(2);
    await later.close();
  });

  it("sends progress notifications while a foreground child runs, when the client asked for them", async () => {
    const { id, token } = await createSession();
    const client = await connectMcpFace(id, token);
    const progress: unknown[] = [];
    const result = await client.callTool(
      {
        name: "subagent",
        arguments: { description: "slow", prompt: script({ think: 6_000 }, { say: "finally" }) },
      },
      { onprogress: (p) => progress.push(p), timeout: 30_000 },
    );
    expect(textOf(result)).toContain("finally");
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress[0]).toMatchObject({ progress: 1 });
    await client.close();
  }, 30_000);

  it("serves 2025 clients that begin with initialize, statelessly", async () => {
    const { id } = await createSession();
    const init = await rpc(id, INITIALIZE);
    expect(init.status).toBe(200);
    const initialized = await answerOf(init);
    expect(initialized.result.protocolVersion).toBe("2025-06-18");
    expect(initialized.result.capabilities.tools).toBeDefined();
    const list = await answerOf(await rpc(id, { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }));
    expect(list.result.tools.map((t: { name: string }) => t.name)).toContain("echo");
    const call = await answerOf(
      await rpc(id, {
        jsonrpc: "2.0",
        id: 3,
        method: "tools/call",
        params: { name: "echo", arguments: { text: "2025" } },
      }),
    );
    expect(call.result.content).toEqual([{ type: "text", text: "2025" }]);
  });

  it("refuses a missing or wrong token (401) and another session's token (404) before reading any MCP, storing nothing", async () => {
    const a = await createSession();
    const b = await createSession();
    const before = await allEvents(a.id);
    const none = await rpc(a.id, INITIALIZE, null);
    expect(none.status).toBe(401);
    const wrong = await rpc(a.id, INITIALIZE, `${a.id}.wrong-secret-wrong-secret`);
    expect(wrong.status).toBe(401);
    const other = await rpc(
      a.id,
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "echo", arguments: { text: "x" } } },
      b.token,
    );
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND");
    expect(await allEvents(a.id)).toEqual(before);
  });

  it("answers bad MCP input with protocol errors or error results, never a 5xx, and changes nothing", async () => {
    const { id } = await createSession();
    const before = await allEvents(id);
    const malformed = await rpc(id, undefined, ADMIN, "{not json");
    expect(malformed.status).toBeLessThan(500);
    expect((await answerOf(malformed)).error.code).toBe(-32700);
    const unknownMethod = await rpc(id, { jsonrpc: "2.0", id: 5, method: "tools/explode", params: {} });
    expect(unknownMethod.status).toBeLessThan(500);
    expect((await answerOf(unknownMethod)).error).toBeDefined();
    const unknownTool = await answerOf(
      await rpc(id, {
        jsonrpc: "2.0",
        id: 6,
        method: "tools/call",
        params: { name: "no_such_tool", arguments: {} },
      }),
    );
    expect(unknownTool.error ?? unknownTool.result?.isError).toBeTruthy();
    const badArgs = await answerOf(
      await rpc(id, {
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: { name: "echo", arguments: { text: 42 } },
      }),
    );
    expect(badArgs.error ?? badArgs.result?.isError).toBeTruthy();
    expect(await allEvents(id)).toEqual(before);
    const get = await workerFetch(
      new Request(`http://example.com/v1/sessions/${id}/mcp`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      }),
    );
    expect(get.status).toBe(405);
  });
});

describe("send_message over MCP takes the same delivery (README 'Steering, deadlines and schedules')", () => {
  it("an MCP client steers the session's running child with delivery next-step: the child reads it inside its turn", async () => {
    const { id, token } = await createSession();
    const started = await workerFetch(
      new Request(`http://example.com/v1/sessions/${id}/subagents`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: JSON.stringify({
          provider: "spawn",
          mode: "continuable",
          label: "steered",
          prompt: script({ think: 1_500 }, { say: "child busy" }),
        }),
      }),
    );
    const { childId } = (await started.json()) as { childId: string };
    await eventually(
      () => allEvents(childId),
      (log) => log.some((e) => e.type === "user/message"),
    );
    const client = await connectMcpFace(id, token);
    const result = await client.callTool({
      name: "send_message",
      arguments: { subagent_id: childId, message: "over mcp, turn left", delivery: "next-step" },
    });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe(`message delivered to subagent ${childId}: it reads it before its next step`);
    await client.close();
    const log = await eventually(
      () => allEvents(childId),
      (events) => events.some((e) => e.type === "turn/end"),
    );
    expect(log.filter((e) => e.type === "turn/start")).toHaveLength(1);
    const said = log.filter((e) => e.type === "assistant/message").map((e) => JSON.stringify(e.data.content));
    expect(said).toEqual([
      expect.stringContaining("child busy"),
      expect.stringContaining("echo: over mcp, turn left"),
    ]);
  });
});
