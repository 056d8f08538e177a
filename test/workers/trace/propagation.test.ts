import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  ADMIN,
  api,
  createSession,
  putProvider,
  startChild,
  waitForRun,
  workerFetch,
} from "../../support/api";
import { allEvents, eventually, waitForEvents, waitForTurnEnds } from "../../support/logs";
import { installRemoteNet, registerRemote } from "../../support/remote";
import { connectMcpFace } from "../../support/mcp-face";
import { script, toolCall } from "../../support/scripts";

/**
 * One trace across every boundary (README "Traces"): a caller's W3C `traceparent` continues into
 * the tree on the API's message and start routes, the A2A face and the MCP face; the runtime sends
 * its own on every request a tool call makes to another deployment, an A2A agent or an MCP server,
 * the span of that call as the parent.
 */

const CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const TRACEPARENT = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;

const { TEST_MCP_URL, TEST_MCP_TOKEN, TEST_A2A_URL, TEST_A2A_TOKEN } = env as unknown as Record<
  string,
  string
>;

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

async function spansOf(id: string): Promise<Span[]> {
  const res = await api("GET", `/v1/sessions/${id}/trace`);
  expect(res.status).toBe(200);
  return (res.body as any).resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans));
}

const attr = (span: Span, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
};
const turnSpans = (spans: Span[], agentId: string) =>
  spans.filter((s) => s.name.startsWith("invoke_agent") && attr(s, "gen_ai.agent.id") === agentId);
const toolSpan = (spans: Span[], tool: string) => spans.find((s) => s.name === `execute_tool ${tool}`)!;
const traceparentOf = (span: Span) => `00-${span.traceId}-${span.spanId}-01`;

describe("a caller's traceparent continues into the tree", () => {
  it("on a message: the turn, its model calls, tools and the children they start are spans of the caller's trace", async () => {
    const { id } = await createSession({ label: "root" });
    const child = script({ call: [toolCall("echo", { text: "deep" })] }, { say: "child done" });
    const sent = await api("POST", `/v1/sessions/${id}/messages`, {
      body: {
        content: script(
          { call: [toolCall("subagent", { description: "child", prompt: child })] },
          { say: "root done" },
        ),
      },
      headers: { traceparent: TRACEPARENT },
    });
    expect(sent.status).toBe(202);
    await waitForTurnEnds(id, 1);
    const spans = await spansOf(id);
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([CALLER_TRACE]));
    const [rootTurn] = turnSpans(spans, id);
    expect(rootTurn!.parentSpanId).toBe(CALLER_SPAN);
    // the child's turn hangs under the call that started it
    const call = toolSpan(spans, "subagent");
    const childTurn = spans.find((s) => s.name === "invoke_agent child")!;
    expect(childTurn.parentSpanId).toBe(call.spanId);
  });

  it("a traceparent that is not valid is ignored: the turn starts a trace of its own, and the message is taken", async () => {
    const { id } = await createSession();
    const sent = await api("POST", `/v1/sessions/${id}/messages`, {
      body: { content: script({ say: "hi" }) },
      headers: { traceparent: `00-${"0".repeat(32)}-${CALLER_SPAN}-01` },
    });
    expect(sent.status).toBe(202);
    await waitForTurnEnds(id, 1);
    const [turn] = turnSpans(await spansOf(id), id);
    expect(turn!.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(turn!.traceId).not.toBe("0".repeat(32));
    expect(turn!.parentSpanId).toBeUndefined();
  });

  it("on a start and a follow-up: the child's turns join the caller's trace", async () => {
    const { id } = await createSession();
    const started = await api("POST", `/v1/sessions/${id}/subagents`, {
      body: { provider: "spawn", mode: "one-shot", prompt: script({ say: "one-shot" }) },
      headers: { traceparent: TRACEPARENT },
    });
    expect(started.status).toBe(201);
    const { runId, id: oneShot } = started.body as { runId: string; id: string };
    await waitForRun(id, runId);
    const [oneShotTurn] = turnSpans(await spansOf(oneShot), oneShot);
    expect(oneShotTurn).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: CALLER_SPAN });

    const { childId } = await startChild(id, {
      provider: "spawn",
      prompt: script({ say: "first" }),
      label: "kept",
    });
    await waitForTurnEnds(childId, 1);
    const second = `00-${"ab".repeat(16)}-${"cd".repeat(8)}-01`;
    const followed = await api("POST", `/v1/sessions/${id}/subagents/${childId}/messages`, {
      body: { content: script({ say: "second" }) },
      headers: { traceparent: second },
    });
    expect(followed.status).toBe(202);
    await waitForTurnEnds(childId, 2);
    const [first, next] = turnSpans(await spansOf(childId), childId);
    expect(first!.traceId).not.toBe("ab".repeat(16)); // a start without one: a trace of its own
    expect(next).toMatchObject({ traceId: "ab".repeat(16), parentSpanId: "cd".repeat(8) });
  });

  it("on the A2A face: the task's turn joins the caller's trace", async () => {
    const response = await workerFetch(
      new Request("http://example.com/v1/a2a", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${ADMIN}`,
          "A2A-Version": "1.0",
          traceparent: TRACEPARENT,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "SendMessage",
          params: {
            message: { messageId: `trace-${Date.now()}`, role: "ROLE_USER", parts: [{ text: "hello" }] },
          },
        }),
      }),
    );
    const answer = (await response.json()) as any;
    const sessionId = answer.result.task.id as string;
    const [turn] = turnSpans(await spansOf(sessionId), sessionId);
    expect(turn).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: CALLER_SPAN });
  });

  it("on the MCP face: a call with _meta.traceparent is a span of the client's trace, under its span", async () => {
    const { id, token } = await createSession();
    const client = await connectMcpFace(id, token);
    try {
      const result = await client.callTool({
        name: "echo",
        arguments: { text: "traced" },
        _meta: { traceparent: TRACEPARENT },
      });
      expect(JSON.stringify(result.content)).toContain("traced");
      const untraced = await client.callTool({ name: "echo", arguments: { text: "untraced" } });
      expect(untraced.isError).not.toBe(true);
    } finally {
      await client.close();
    }
    const calls = (await spansOf(id)).filter((s) => s.name === "execute_tool echo");
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: CALLER_SPAN });
    expect(calls[1]!.traceId).not.toBe(CALLER_TRACE);
    expect(calls[1]!.parentSpanId).toBeUndefined();
  });
});

describe("the runtime's traceparent goes out on every request a tool call makes", () => {
  it("to another deployment: its session's turn is a span of this trace, under the call that started it", async () => {
    const net = installRemoteNet();
    try {
      const provider = await registerRemote();
      const root = await createSession({ providers: [provider] });
      await api("POST", `/v1/sessions/${root.id}/messages`, {
        body: {
          content: script(
            { call: [{ tool: "subagent", args: { description: "far", prompt: "front" } }] },
            { say: "done" },
          ),
        },
      });
      await waitForEvents(root.id, (es) => es.some((e) => e.type === "turn/end"), { timeoutMs: 15_000 });
      const spans = await spansOf(root.id);
      const call = toolSpan(spans, "subagent");
      const sent = net.calls.filter((c) => c.host === "remote.test" && c.method === "POST");
      expect(sent.length).toBeGreaterThan(0);
      for (const request of sent) expect(request.headers.traceparent).toBe(traceparentOf(call));
      const remoteId = (await allEvents(root.id)).find((e) => e.type === "subagent/remote")!.data.remoteId;
      const [farTurn] = turnSpans(await spansOf(remoteId), remoteId);
      expect(farTurn).toMatchObject({ traceId: call.traceId, parentSpanId: call.spanId });
    } finally {
      net.restore();
    }
  });

  it("to an A2A agent: the message carries the traceparent of the start that sent it", async () => {
    const name = `a2a-${crypto.randomUUID().slice(0, 8)}`;
    expect((await putProvider(name, { kind: "a2a", url: TEST_A2A_URL, token: TEST_A2A_TOKEN })).status).toBe(
      201,
    );
    const { id } = await createSession();
    const started = await api("POST", `/v1/sessions/${id}/subagents`, {
      body: { provider: name, mode: "one-shot", prompt: "echo: traced" },
      headers: { traceparent: TRACEPARENT },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const { runId } = started.body as { runId: string };
    await waitForRun(id, runId);
    const stats = await eventually(
      async () => (await fetch(`${TEST_A2A_URL}/__stats`)).json() as Promise<any>,
      (s) => s.traceparents[`subagents-edge-run-${runId}`] !== undefined,
    );
    expect(stats.traceparents[`subagents-edge-run-${runId}`]).toBe(TRACEPARENT);
  });

  it("to an MCP server: the call's _meta.traceparent is the span of that tool call", async () => {
    const { id } = await createSession({
      mcpServers: [{ name: "calc", url: TEST_MCP_URL, token: TEST_MCP_TOKEN }],
    });
    const before = ((await (await fetch(new URL("/__calls", TEST_MCP_URL))).json()) as any).traceparents
      .length;
    await api("POST", `/v1/sessions/${id}/messages`, {
      body: { content: script({ call: [{ tool: "mcp__calc__add", args: { a: 1, b: 2 } }] }, { say: "3" }) },
    });
    await waitForTurnEnds(id, 1);
    const call = toolSpan(await spansOf(id), "mcp__calc__add");
    const served = (
      (await (await fetch(new URL("/__calls", TEST_MCP_URL))).json()) as any
    ).traceparents.slice(before);
    expect(served).toContainEqual({ tool: "add", traceparent: traceparentOf(call) });
  });
});
