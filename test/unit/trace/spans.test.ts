import { describe, expect, it } from "vitest";
import type { EventData, EventType, SessionEvent } from "../../../src/contract/events";
import { otlpTraces } from "../../../src/trace/otlp";
import {
  callTrace,
  MAX_CONTENT_CHARS,
  newTraceId,
  type Span,
  spansOf,
  toolSpanId,
  turnSpanId,
} from "../../../src/trace/spans";

const SESSION = "0b6f0d1e-5e1a-4c37-9a52-1c2b3d4e5f60";

/** A log from (type, data, at) triples, seq in order. */
function log(...entries: [EventType, unknown, number][]): SessionEvent[] {
  return entries.map(([type, data, at], seq) => ({ seq, type, at, data: data as EventData[EventType] }));
}

const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens });

/** One turn: a message, a step that calls echo, its result, a final answer. */
const ONE_TURN = log(
  [
    "agent/inbox/inserted",
    { messageId: "m1", lane: "next-turn", waking: true, source: { kind: "user" } },
    1_000,
  ],
  ["turn/start", { turn: 1 }, 1_010],
  ["agent/inbox/claimed", { messageId: "m1", turn: 1 }, 1_010],
  [
    "user/message",
    { messageId: "m1", content: [{ type: "text", text: "secret prompt" }], source: { kind: "user" } },
    1_010,
  ],
  [
    "assistant/message",
    {
      content: [],
      toolCalls: [{ id: "c1", name: "echo", args: { text: "x" } }],
      stopReason: "tool-use",
      usage: usage(100, 10),
      model: "openai:gpt-4o-mini",
    },
    1_500,
  ],
  [
    "tool/result",
    { toolCallId: "c1", name: "echo", content: [{ type: "text", text: "x" }], isError: false },
    1_520,
  ],
  [
    "assistant/message",
    {
      content: [{ type: "text", text: "secret answer" }],
      stopReason: "end",
      usage: usage(130, 5),
      model: "openai:gpt-4o-mini",
    },
    1_900,
  ],
  ["turn/end", { turn: 1, reason: "completed", usage: usage(230, 15) }, 1_901],
);

const byName = (spans: Span[], name: string) => spans.filter((s) => s.name === name);

describe("spans are a projection of a session's log (README 'Traces')", () => {
  it("a turn is an invoke_agent span, each step a chat span under it, each tool call an execute_tool span under its step", () => {
    const spans = spansOf(ONE_TURN, {
      sessionId: SESSION,
      label: "researcher",
      model: "openai:gpt-4o-mini",
      depth: 0,
    });
    expect(spans.map((s) => s.name)).toEqual([
      "invoke_agent researcher",
      "chat openai:gpt-4o-mini",
      "execute_tool echo",
      "chat openai:gpt-4o-mini",
    ]);
    const [turn, step1, tool, step2] = spans as [Span, Span, Span, Span];
    expect(turn).toMatchObject({
      spanId: turnSpanId(SESSION, 1),
      traceId: newTraceId(SESSION, 1),
      start: 1_010,
      end: 1_901,
    });
    expect(turn.parentSpanId).toBeUndefined();
    expect(turn.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.id": SESSION,
      "gen_ai.agent.name": "researcher",
      "gen_ai.conversation.id": SESSION,
      "gen_ai.usage.input_tokens": 230,
      "gen_ai.usage.output_tokens": 15,
      "gen_ai.response.finish_reasons": ["completed"],
    });
    expect(step1).toMatchObject({
      parentSpanId: turn.spanId,
      traceId: turn.traceId,
      start: 1_010,
      end: 1_500,
      kind: "client",
    });
    expect(step1.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.usage.input_tokens": 100,
      "gen_ai.response.finish_reasons": ["tool-use"],
    });
    expect(tool).toMatchObject({
      spanId: toolSpanId(SESSION, 1, "c1"),
      parentSpanId: step1.spanId,
      start: 1_500,
      end: 1_520,
    });
    expect(tool.attributes).toMatchObject({ "gen_ai.tool.name": "echo", "gen_ai.tool.call.id": "c1" });
    // the second step began when the tool's result was appended
    expect(step2).toMatchObject({ parentSpanId: turn.spanId, start: 1_520, end: 1_900 });
    // no prompt or answer text rides on a span
    expect(JSON.stringify(spans)).not.toMatch(/secret/);
  });

  it("with content opted in, what was said rides in the GenAI conventions' forms, each value cut to its bound", () => {
    const spans = spansOf(ONE_TURN, {
      sessionId: SESSION,
      model: "openai:gpt-4o-mini",
      depth: 0,
      content: true,
    });
    const [turn, step1, tool, step2] = spans;
    expect(JSON.parse(turn!.attributes["gen_ai.input.messages"] as string)).toEqual([
      { role: "user", parts: [{ type: "text", content: "secret prompt" }] },
    ]);
    expect(JSON.parse(turn!.attributes["gen_ai.output.messages"] as string)).toEqual([
      { role: "assistant", parts: [{ type: "text", content: "secret answer" }] },
    ]);
    expect(JSON.parse(step1!.attributes["gen_ai.output.messages"] as string)).toEqual([
      {
        role: "assistant",
        parts: [{ type: "tool_call", id: "c1", name: "echo", arguments: { text: "x" } }],
        finish_reason: "tool-use",
      },
    ]);
    expect(tool!.attributes).toMatchObject({
      "gen_ai.tool.call.arguments": '{"text":"x"}',
      "gen_ai.tool.call.result": "x",
    });
    expect(step2!.attributes["gen_ai.output.messages"]).toContain("secret answer");
    // ids and timing are those of the same log without content
    const plain = spansOf(ONE_TURN, { sessionId: SESSION, model: "openai:gpt-4o-mini", depth: 0 });
    expect(spans.map((s) => [s.spanId, s.start, s.end])).toEqual(
      plain.map((s) => [s.spanId, s.start, s.end]),
    );
    // a long answer is cut
    const long = ONE_TURN.map((e) =>
      e.type === "tool/result"
        ? {
            ...e,
            data: {
              ...(e.data as object),
              content: [{ type: "text", text: "y".repeat(MAX_CONTENT_CHARS + 10) }],
            },
          }
        : e,
    ) as SessionEvent[];
    const result = spansOf(long, { sessionId: SESSION, model: "scripted", depth: 0, content: true })[2]!
      .attributes["gen_ai.tool.call.result"] as string;
    expect(result).toHaveLength(MAX_CONTENT_CHARS + "…[cut]".length);
    expect(result.endsWith("…[cut]")).toBe(true);
  });

  it("the same log gives the same spans, ids included; another session's gives other ids", () => {
    const facts = { sessionId: SESSION, model: "scripted", depth: 0 };
    expect(spansOf(ONE_TURN, facts)).toEqual(spansOf(ONE_TURN, facts));
    const other = spansOf(ONE_TURN, { ...facts, sessionId: "1b6f0d1e-5e1a-4c37-9a52-1c2b3d4e5f60" });
    expect(other.map((s) => s.spanId)).not.toContain(spansOf(ONE_TURN, facts)[0]!.spanId);
    for (const span of other) {
      expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
    }
  });

  it("a turn whose first message carries a trace continues it under the span that caused it; a later message changes nothing", () => {
    const caused = { traceId: "a".repeat(32), parentSpanId: "b".repeat(16) };
    const events = ONE_TURN.map((e) =>
      e.type === "user/message"
        ? { ...e, data: { ...(e.data as object), source: { kind: "user", trace: caused } } }
        : e,
    ) as SessionEvent[];
    const spans = spansOf(events, { sessionId: SESSION, model: "scripted", depth: 1 });
    expect(spans.every((s) => s.traceId === caused.traceId)).toBe(true);
    expect(spans[0]).toMatchObject({ parentSpanId: caused.parentSpanId });
    // a steering message claimed mid-turn with another trace: the turn stays where it started
    const steered = [
      ...events.slice(0, 5),
      {
        seq: 100,
        type: "user/message",
        at: 1_510,
        data: {
          messageId: "m2",
          content: [],
          source: { kind: "user", trace: { traceId: "c".repeat(32), parentSpanId: "d".repeat(16) } },
        },
      },
      ...events.slice(5),
    ] as SessionEvent[];
    const again = spansOf(steered, { sessionId: SESSION, model: "scripted", depth: 1 });
    expect(again.map((s) => [s.traceId, s.spanId, s.parentSpanId])).toEqual(
      spans.map((s) => [s.traceId, s.spanId, s.parentSpanId]),
    );
    // the turn's tool call is the parent of what it causes, in the same trace
    expect(callTrace(SESSION, 1, "c1", caused)).toEqual({
      traceId: caused.traceId,
      parentSpanId: byName(spans, "execute_tool echo")[0]!.spanId,
    });
    expect(callTrace(SESSION, 1, "c1", undefined).traceId).toBe(newTraceId(SESSION, 1));
  });

  it("a failed turn and an error result carry error status; a turn still running ends at the log's last event; a fork's seed is not its own", () => {
    const failed = log(
      ["turn/start", { turn: 1 }, 10],
      [
        "assistant/message",
        {
          content: [],
          toolCalls: [{ id: "c9", name: "explode", args: {} }],
          stopReason: "tool-use",
          model: "scripted",
        },
        20,
      ],
      [
        "tool/result",
        { toolCallId: "c9", name: "explode", content: [{ type: "text", text: "boom" }], isError: true },
        30,
      ],
      ["turn/end", { turn: 1, reason: "error", error: "model call failed", code: "BUDGET_EXCEEDED" }, 40],
      ["turn/start", { turn: 2 }, 50],
      [
        "assistant/message",
        {
          content: [],
          toolCalls: [{ id: "c10", name: "slow", args: {} }],
          stopReason: "tool-use",
          model: "scripted",
        },
        60,
      ],
    );
    const spans = spansOf(failed, { sessionId: SESSION, model: "scripted", depth: 0 });
    const [turn1, , tool1, turn2, , tool2] = spans as Span[];
    expect(turn1).toMatchObject({ error: "model call failed" });
    expect(turn1!.attributes["error.type"]).toBe("BUDGET_EXCEEDED");
    expect(tool1).toMatchObject({ error: expect.any(String) });
    expect(tool1!.attributes["error.type"]).toBe("tool_error");
    expect(turn2).toMatchObject({ end: 60 });
    expect(turn2!.attributes["subagents.in_progress"]).toBe(true);
    expect(tool2).toMatchObject({ start: 60, end: 60 });
    // a fork child whose first four events are its parent's
    expect(
      spansOf(failed, { sessionId: SESSION, model: "scripted", depth: 1, fromSeq: 4 }).map((s) => s.name),
    ).toEqual([`invoke_agent ${SESSION}`, "chat scripted", "execute_tool slow"]);
  });

  it("compactions are chat spans of their own, and an MCP client's call an execute_tool span", () => {
    const events = log(
      ["turn/start", { turn: 1 }, 10],
      [
        "context/compacted",
        {
          throughSeq: 0,
          summary: "s",
          tokensBefore: 900,
          tokensAfter: 100,
          trigger: "threshold",
          usage: usage(800, 50),
        },
        30,
      ],
      [
        "assistant/message",
        { content: [{ type: "text", text: "a" }], stopReason: "end", model: "scripted" },
        40,
      ],
      ["turn/end", { turn: 1, reason: "completed" }, 41],
      ["mcp/call", { callId: "k1", name: "echo", args: {} }, 100],
      ["mcp/result", { callId: "k1", name: "echo", content: [], isError: false }, 120],
      [
        "mcp/call",
        {
          callId: "k2",
          name: "echo",
          args: {},
          trace: { traceId: "e".repeat(32), parentSpanId: "f".repeat(16) },
        },
        130,
      ],
    );
    const spans = spansOf(events, { sessionId: SESSION, model: "scripted", depth: 0 });
    const compaction = spans.find((s) => s.attributes["subagents.purpose"] === "compaction")!;
    expect(compaction).toMatchObject({ start: 10, end: 30, parentSpanId: turnSpanId(SESSION, 1) });
    expect(compaction.attributes["gen_ai.usage.input_tokens"]).toBe(800);
    const [mcp, traced] = byName(spans, "execute_tool echo");
    expect(mcp).toMatchObject({ start: 100, end: 120 });
    expect(mcp!.parentSpanId).toBeUndefined();
    // a client that sent `_meta.traceparent`: the call is a span of its trace, under its span
    expect(traced).toMatchObject({ traceId: "e".repeat(32), parentSpanId: "f".repeat(16) });
    expect(traced!.traceId).not.toBe(mcp!.traceId);
  });
});

describe("OTLP/HTTP JSON (the encoding POST /v1/traces takes)", () => {
  it("writes ids as hex, times as nanosecond strings, integers as strings, the service name as a resource attribute, and errors as status 2", () => {
    const spans = spansOf(ONE_TURN, { sessionId: SESSION, model: "openai:gpt-4o-mini", depth: 0 });
    const otlp = otlpTraces(spans, "subagents-test");
    expect(otlp.resourceSpans).toHaveLength(1);
    const [resource] = otlp.resourceSpans;
    expect(resource!.resource.attributes).toEqual([
      { key: "service.name", value: { stringValue: "subagents-test" } },
    ]);
    const [scope] = resource!.scopeSpans;
    expect(scope!.spans).toHaveLength(spans.length);
    const turn = scope!.spans[0]!;
    expect(turn).toMatchObject({
      traceId: spans[0]!.traceId,
      spanId: spans[0]!.spanId,
      kind: 1,
      startTimeUnixNano: "1010000000",
      endTimeUnixNano: "1901000000",
      status: { code: 0 },
    });
    expect(turn.attributes).toContainEqual({ key: "gen_ai.usage.input_tokens", value: { intValue: "230" } });
    expect(turn.attributes).toContainEqual({
      key: "gen_ai.response.finish_reasons",
      value: { arrayValue: { values: [{ stringValue: "completed" }] } },
    });
    expect(scope!.spans[1]).toMatchObject({ kind: 3, parentSpanId: spans[0]!.spanId });
    const failed = otlpTraces([{ ...spans[2]!, error: "boom" }], "x").resourceSpans[0]!.scopeSpans[0]!
      .spans[0]!;
    expect(failed.status).toEqual({ code: 2, message: "boom" });
  });
});
