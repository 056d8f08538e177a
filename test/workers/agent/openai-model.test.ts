import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, createSession } from "../../support/api";
import { fakeOpenAiUrl, type FakeRequest, fakeRequests } from "../../support/fake-openai";
import { assistantTexts, waitForEvents, type WireEvent } from "../../support/logs";

/**
 * The OpenAI-compatible adapter against a real HTTP server (test/setup/openai-server.ts, started
 * by vitest's globalSetup in Node), end to end through a session: HTTP API -> session Durable
 * Object -> turn driver -> OpenAiModel -> workerd's outbound fetch -> the fake server.
 */

const API_KEY = "test-openai-key";

/** Sends one message and waits for the turn it starts to end; returns the log and the requests it made. */
async function turn(id: string, content: string): Promise<{ events: WireEvent[]; requests: FakeRequest[] }> {
  const before = (await fakeRequests()).count;
  const already = (await waitForEvents(id, () => true)).filter((e) => e.type === "turn/end").length;
  const sent = await api("POST", `/v1/sessions/${id}/messages`, { body: { content } });
  expect(sent.status).toBe(202);
  const events: WireEvent[] = await waitForEvents(
    id,
    (es) => es.filter((e) => e.type === "turn/end").length > already,
  );
  return { events, requests: (await fakeRequests(before)).requests };
}

function since(events: WireEvent[], type: string): WireEvent[] {
  const start = events.findLastIndex((e) => e.type === "turn/start");
  return events.slice(start).filter((e) => e.type === type);
}

describe("the test setup", () => {
  it("gives the Worker the fake server's loopback address and key", () => {
    expect(env.OPENAI_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect((env as unknown as { OPENAI_API_KEY?: string }).OPENAI_API_KEY).toBe(API_KEY);
  });

  it("the fake server enforces the key, so answered turns prove the adapter sent it", async () => {
    const wrong = await fetch(fakeOpenAiUrl("/v1/chat/completions"), {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer not-the-key" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(wrong.status).toBe(401);
    const none = await fetch(fakeOpenAiUrl("/v1/chat/completions"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(none.status).toBe(401);
  });
});

describe("openai:<model> sessions talk to an OpenAI-compatible server", () => {
  it("answers a plain message: one request with the user text, tools and the key", async () => {
    const { id } = await createSession({ model: "openai:fake-model" });
    const { events, requests } = await turn(id, "hi");

    expect(events.map((e) => e.type)).toEqual([
      "agent/inbox/inserted",
      "turn/start",
      "agent/inbox/claimed",
      "user/message",
      "assistant/message",
      "turn/end",
    ]);
    expect(assistantTexts(events)).toEqual(["hello from fake: hi"]);
    const assistant = since(events, "assistant/message")[0]!;
    expect(assistant.data).toEqual({
      content: [{ type: "text", text: "hello from fake: hi" }],
      stopReason: "end",
      usage: { inputTokens: 1, outputTokens: 4 },
      model: "openai:fake-model",
    });
    expect(since(events, "turn/end")[0]!.data).toEqual({
      turn: 1,
      reason: "completed",
      usage: { inputTokens: 1, outputTokens: 4 },
    });

    expect(requests).toHaveLength(1);
    const [request] = requests;
    expect(request!.path).toBe("/v1/chat/completions");
    expect(request!.auth).toBe("ok");
    expect(request!.status).toBe(200);
    expect(request!.body.model).toBe("fake-model");
    // No persona: no system message.
    expect(request!.body.messages).toEqual([{ role: "user", content: "hi" }]);
    // The built-in echo tool among the session's tools, as an OpenAI function with its JSON schema.
    const tools = request!.body.tools ?? [];
    expect(tools.every((t) => t.type === "function")).toBe(true);
    expect(tools.find((t) => t.function.name === "echo")).toEqual({
      type: "function",
      function: {
        name: "echo",
        description: "Returns the given text unchanged.",
        parameters: {
          type: "object",
          properties: { text: { type: "string", maxLength: 65_536 } },
          required: ["text"],
          additionalProperties: false,
        },
      },
    });
    // zod's `$schema` keyword is stripped (strict compatible servers reject it).
    expect(JSON.stringify(tools)).not.toContain("$schema");
  });

  it("runs a tool call round trip: tool_calls -> echo -> tool message with the same id -> text", async () => {
    const { id } = await createSession({ model: "openai:fake-model" });
    const { events, requests } = await turn(id, "use the tool");

    expect(events.map((e) => e.type).slice(3)).toEqual([
      "user/message",
      "assistant/message",
      "tool/result",
      "assistant/message",
      "turn/end",
    ]);
    expect(requests).toHaveLength(2);
    const [first, second] = requests as [FakeRequest, FakeRequest];
    const callId = `call_${first.index}`;

    const [withCall, final] = since(events, "assistant/message") as [WireEvent, WireEvent];
    expect(withCall.data).toEqual({
      content: [],
      toolCalls: [{ id: callId, name: "echo", args: { text: "ping" } }],
      stopReason: "tool-use",
      usage: { inputTokens: 1, outputTokens: 0 },
      model: "openai:fake-model",
    });
    expect(since(events, "tool/result")[0]!.data).toEqual({
      toolCallId: callId,
      name: "echo",
      content: [{ type: "text", text: "ping" }],
      isError: false,
    });
    expect(final.data.content).toEqual([{ type: "text", text: "tool said: ping" }]);
    expect(final.data.stopReason).toBe("end");
    expect(since(events, "turn/end")[0]!.data).toEqual({
      turn: 1,
      reason: "completed",
      usage: { inputTokens: 4, outputTokens: 3 },
    });

    expect(first.body.messages).toEqual([{ role: "user", content: "use the tool" }]);
    expect(first.body.tools?.map((t) => t.function.name)).toContain("echo");
    // The second call carries the assistant's tool_calls and the tool answer, tied by the id.
    expect(second.auth).toBe("ok");
    expect(second.body.messages).toEqual([
      { role: "user", content: "use the tool" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: callId, type: "function", function: { name: "echo", arguments: '{"text":"ping"}' } },
        ],
      },
      { role: "tool", tool_call_id: callId, content: "ping" },
    ]);
    expect(second.body.tools).toEqual(first.body.tools);
  });

  it("maps finish_reason length to a max-tokens turn end", async () => {
    const { id } = await createSession({ model: "openai:fake-model" });
    const { events, requests } = await turn(id, "be long");
    expect(requests).toHaveLength(1);
    const assistant = since(events, "assistant/message")[0]!;
    expect(assistant.data.content).toEqual([{ type: "text", text: "this answer is cut" }]);
    expect(assistant.data.stopReason).toBe("max-tokens");
    expect(since(events, "turn/end")[0]!.data).toEqual({
      turn: 1,
      reason: "max-tokens",
      usage: { inputTokens: 1, outputTokens: 4 },
    });
  });

  it("retries a 500 up to the step's attempt budget, then ends the turn with an error naming the status, never the key (even when the server echoes it)", async () => {
    const { id } = await createSession({ model: "openai:fake-model" });
    const { events, requests } = await turn(id, "fail please");
    // MODEL_ATTEMPTS_PER_STEP (4 by default): one call and three retries, then the turn ends
    expect(requests).toHaveLength(4);
    expect(requests.every((r) => r.auth === "ok" && r.status === 500)).toBe(true);
    expect(since(events, "assistant/message")).toEqual([]);
    const end = since(events, "turn/end")[0]!;
    expect(end.data.turn).toBe(1);
    expect(end.data.reason).toBe("error");
    expect(end.data.error).toEqual(expect.any(String));
    expect(end.data.error).toMatch(
      /^the model step failed 4 times; last: openai\.chat answered 500: fake failure$/,
    );
    expect(end.data.error).toContain("fake failure");
    expect(end.data.error).not.toContain(API_KEY);
    expect(JSON.stringify(events)).not.toContain(API_KEY);

    // The session is still usable after a failed model call.
    const next = await turn(id, "still there?");
    expect(assistantTexts(next.events).at(-1)).toBe("hello from fake: still there?");
    expect(since(next.events, "turn/end")[0]!.data).toEqual({
      turn: 2,
      reason: "completed",
      usage: { inputTokens: 2, outputTokens: 5 },
    });
  });

  it("sends the persona as the system prompt and the earlier turns as history", async () => {
    const persona = "You are a terse assistant for the adapter test.";
    const { id } = await createSession({ model: "openai:fake-model", persona });
    const first = await turn(id, "hi");
    expect(first.requests[0]!.body.messages).toEqual([
      { role: "system", content: persona },
      { role: "user", content: "hi" },
    ]);
    const second = await turn(id, "and again");
    expect(second.requests).toHaveLength(1);
    expect(second.requests[0]!.body.messages).toEqual([
      { role: "system", content: persona },
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello from fake: hi" },
      { role: "user", content: "and again" },
    ]);
    expect(assistantTexts(second.events)).toEqual(["hello from fake: hi", "hello from fake: and again"]);
  });

  it("rejects a session with an unknown model route", async () => {
    for (const model of ["nonsense", "openai:", "workers-ai:"]) {
      const res = await api("POST", "/v1/sessions", { body: { model } });
      expect(res.status, model).toBe(400);
      expect(res.body.error.code, model).toBe("INVALID_REQUEST");
    }
    // Without the AI binding (the test environment has none) workers-ai routes are refused up front.
    const res = await api("POST", "/v1/sessions", {
      body: { model: "workers-ai:@cf/meta/llama-3.3-70b-instruct-fp8-fast" },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("INVALID_REQUEST");
  });
});
