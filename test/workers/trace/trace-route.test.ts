import { describe, expect, it } from "vitest";
import { api, createSession, expectError, sendMessage } from "../../support/api";
import { waitForTurnEnds } from "../../support/logs";
import { script, toolCall } from "../../support/scripts";

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

function spansOf(body: any): OtlpSpan[] {
  return body.resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans));
}

function attr(span: OtlpSpan, key: string): unknown {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
}

describe("GET /v1/sessions/:id/trace (README 'Traces')", () => {
  it("one trace covers a root, its child and its grandchild: each child's turn hangs under the tool call that started it", async () => {
    const { id, token } = await createSession({ label: "root" });
    const grandchild = script({ call: [toolCall("echo", { text: "deep" })] }, { say: "grandchild done" });
    const child = script(
      { call: [toolCall("subagent", { description: "grandchild", prompt: grandchild })] },
      { say: "child done" },
    );
    await sendMessage(
      id,
      script({ call: [toolCall("subagent", { description: "child", prompt: child })] }, { say: "root done" }),
    );
    await waitForTurnEnds(id, 1);
    const res = await api("GET", `/v1/sessions/${id}/trace`, { token });
    expect(res.status).toBe(200);
    expect(res.body.resourceSpans[0].resource.attributes).toEqual([
      { key: "service.name", value: { stringValue: "subagents-edge" } },
    ]);
    const spans = spansOf(res.body);
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    // every parent is in the trace; exactly one root span: the root's turn
    const roots = spans.filter((s) => s.parentSpanId === undefined);
    expect(roots.map((s) => s.name)).toEqual(["invoke_agent root"]);
    for (const span of spans)
      if (span.parentSpanId) expect(byId.has(span.parentSpanId), span.name).toBe(true);
    const agents = spans.filter((s) => attr(s, "gen_ai.operation.name") === "invoke_agent");
    expect(agents.map((s) => attr(s, "subagents.depth"))).toEqual(["0", "1", "2"]);
    for (const agent of agents.slice(1)) {
      const call = byId.get(agent.parentSpanId!)!;
      expect(call.name).toBe("execute_tool subagent");
      // the call's span lasts as long as the child's turn it waited for
      expect(BigInt(call.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(agent.endTimeUnixNano));
    }
    expect(spans.filter((s) => s.name === "execute_tool echo")).toHaveLength(1);
    expect(spans.filter((s) => s.name === "chat scripted")).toHaveLength(6);
  });

  it("needs the token that may read the session: another session's is 404", async () => {
    const { id } = await createSession();
    const other = await createSession();
    expectError(await api("GET", `/v1/sessions/${id}/trace`, { token: other.token }), 404, "NOT_FOUND");
    const empty = await api("GET", `/v1/sessions/${id}/trace`);
    expect(empty.status).toBe(200);
    expect(spansOf(empty.body)).toEqual([]);
  });
});
