import { describe, expect, it } from "vitest";
import { aiSdkModel, type AiSdkLanguageModel } from "../../../src/agent/ai-sdk-model";
import { builtinModels } from "../../../src/agent/builtin-models";
import { type ConversationMessage, ModelError, type ModelRequest } from "../../../src/agent/model";
import { ModelRoutes } from "../../../src/agent/model-provider";

/**
 * `aiSdkModel` against AI SDK language models: a specification-level model written here (the
 * parts a provider streams, for v4 and v2), and the real `workers-ai-provider` over a
 * hand-written AI binding (what the built-in `workers-ai:` route is). The OpenAI-compatible route
 * is tested over HTTP against a real server (test/workers/agent/openai-model.test.ts).
 */

const history: ConversationMessage[] = [
  { role: "user", content: [{ type: "text", text: "use the tool" }], source: { kind: "user" } },
  { role: "assistant", content: [], toolCalls: [{ id: "call_a", name: "echo", args: { text: "ping" } }] },
  {
    role: "tool",
    toolCallId: "call_a",
    name: "echo",
    content: [{ type: "text", text: "ping" }],
    isError: false,
  },
  { role: "user", content: [{ type: "text", text: "again" }], source: { kind: "user" } },
];

function request(extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: "custom:m",
    system: "be brief",
    turn: history.slice(-1),
    history: () => history,
    tools: [
      {
        name: "echo",
        description: "Returns the given text unchanged.",
        parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
      },
    ],
    signal: new AbortController().signal,
    ...extra,
  };
}

/** A language model of the given specification version that streams `parts` and records its calls. */
function streamingModel(
  version: "v2" | "v4",
  parts: unknown[] | Error,
): { model: AiSdkLanguageModel; calls: unknown[] } {
  const calls: unknown[] = [];
  const model = {
    specificationVersion: version,
    provider: "test-provider",
    modelId: "m",
    supportedUrls: {},
    async doGenerate() {
      throw new Error("the adapter streams");
    },
    async doStream(options: unknown) {
      calls.push(options);
      if (parts instanceof Error) throw parts;
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of parts) controller.enqueue(part);
            controller.close();
          },
        }),
      };
    },
  };
  return { model: model as unknown as AiSdkLanguageModel, calls };
}

const v4Usage = {
  inputTokens: { total: 40, noCache: 10, cacheRead: 30, cacheWrite: undefined },
  outputTokens: { total: 12, text: 4, reasoning: 8 },
};

describe("aiSdkModel: one model step over an AI SDK language model", () => {
  it("sends the conversation, tools and sampling parameters, and streams the text to onTextDelta", async () => {
    const { model, calls } = streamingModel("v4", [
      { type: "stream-start", warnings: [] },
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "hel" },
      { type: "text-delta", id: "t", delta: "lo" },
      { type: "text-end", id: "t" },
      { type: "finish", usage: v4Usage, finishReason: { unified: "stop", raw: "stop" } },
    ]);
    const deltas: string[] = [];
    const reply = await aiSdkModel(model).generate(
      request({ params: { temperature: 0.2, maxOutputTokens: 64 }, onTextDelta: (t) => deltas.push(t) }),
    );
    expect(deltas).toEqual(["hel", "lo"]);
    expect(reply).toEqual({
      content: [{ type: "text", text: "hello" }],
      toolCalls: [],
      stopReason: "end",
      usage: { inputTokens: 40, outputTokens: 12, cachedInputTokens: 30, reasoningTokens: 8 },
    });
    const call = calls[0] as Record<string, unknown>;
    expect(call.temperature).toBe(0.2);
    expect(call.maxOutputTokens).toBe(64);
    expect(call.toolChoice).toEqual({ type: "auto" });
    expect(call.tools).toEqual([
      {
        type: "function",
        name: "echo",
        description: "Returns the given text unchanged.",
        inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
      },
    ]);
    expect(call.prompt).toEqual([
      { role: "system", content: "be brief" },
      { role: "user", content: [{ type: "text", text: "use the tool" }] },
      {
        role: "assistant",
        content: [{ type: "tool-call", toolCallId: "call_a", toolName: "echo", input: { text: "ping" } }],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "call_a",
            toolName: "echo",
            output: { type: "text", value: "ping" },
          },
        ],
      },
      { role: "user", content: [{ type: "text", text: "again" }] },
    ]);
  });

  it("maps tool calls (their JSON input parsed) and v2's flat usage and string finish reason", async () => {
    const { model, calls } = streamingModel("v2", [
      { type: "tool-call", toolCallId: "c1", toolName: "echo", input: '{"text":"x"}' },
      { type: "tool-call", toolCallId: "", toolName: "echo", input: "" },
      {
        type: "finish",
        usage: { inputTokens: 5, outputTokens: 2, cachedInputTokens: 1 },
        finishReason: "tool-calls",
      },
    ]);
    const reply = await aiSdkModel(model).generate(request({ tools: [] }));
    expect(reply.stopReason).toBe("tool-use");
    expect(reply.toolCalls[0]).toEqual({ id: "c1", name: "echo", args: { text: "x" } });
    expect(reply.toolCalls[1]).toMatchObject({ name: "echo", args: {} });
    expect(reply.toolCalls[1]!.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(reply.usage).toEqual({ inputTokens: 5, outputTokens: 2, cachedInputTokens: 1 });
    // no tools: neither tools nor a tool choice is sent
    expect(Object.keys(calls[0] as object)).not.toContain("tools");
    expect(Object.keys(calls[0] as object)).not.toContain("toolChoice");
  });

  it("maps length and content-filter stops", async () => {
    const cut = streamingModel("v4", [
      { type: "text-delta", id: "t", delta: "cut" },
      { type: "finish", usage: v4Usage, finishReason: { unified: "length", raw: "length" } },
    ]);
    expect((await aiSdkModel(cut.model).generate(request())).stopReason).toBe("max-tokens");
    const filtered = streamingModel("v4", [
      { type: "finish", usage: v4Usage, finishReason: { unified: "content-filter", raw: "x" } },
    ]);
    expect((await aiSdkModel(filtered.model).generate(request())).stopReason).toBe("refusal");
  });

  it("turns provider failures into ModelErrors with status, Retry-After and no credentials", async () => {
    const apiCallError = Object.assign(
      new Error("Rate limited for key sk-live-abcdefghijklmnop (Authorization: Bearer secret-token-123)"),
      {
        name: "AI_APICallError",
        statusCode: 429,
        isRetryable: true,
        responseHeaders: { "retry-after": "3" },
      },
    );
    const { model } = streamingModel("v4", apiCallError);
    const error = await aiSdkModel(model)
      .generate(request())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelError);
    const e = error as ModelError;
    expect(e.status).toBe(429);
    expect(e.retryAfter).toBe("3");
    expect(e.retryable).toBe(true);
    expect(e.message).toMatch(/^test-provider answered 429: Rate limited/);
    expect(e.message).not.toContain("sk-live-abcdefghijklmnop");
    expect(e.message).not.toContain("secret-token-123");

    const broken = streamingModel("v4", [
      { type: "error", error: Object.assign(new Error("overloaded"), { statusCode: 529 }) },
    ]);
    const streamed = (await aiSdkModel(broken.model)
      .generate(request())
      .catch((x: unknown) => x)) as ModelError;
    expect(streamed).toMatchObject({ status: 529, retryable: true });

    const unfinished = streamingModel("v4", [{ type: "text-delta", id: "t", delta: "half" }]);
    await expect(aiSdkModel(unfinished.model).generate(request())).rejects.toThrow(/ended without finishing/);

    const denied = streamingModel("v4", Object.assign(new Error("bad request"), { statusCode: 400 }));
    expect(
      await aiSdkModel(denied.model)
        .generate(request())
        .catch((x: unknown) => x),
    ).toMatchObject({
      status: 400,
      retryable: false,
    });
  });

  it("refuses what is not a language model", () => {
    expect(() => aiSdkModel({} as AiSdkLanguageModel)).toThrow(/not an AI SDK language model/);
  });
});

describe("the workers-ai: route: workers-ai-provider over the AI binding", () => {
  function binding(answers: unknown[]) {
    const calls: { model: string; inputs: Record<string, unknown>; options: Record<string, unknown> }[] = [];
    return {
      calls,
      ai: {
        async run(model: string, inputs: Record<string, unknown>, options: Record<string, unknown>) {
          calls.push({ model, inputs, options });
          const next = answers.shift();
          if (next instanceof Error) throw next;
          return next;
        },
      },
    };
  }

  it("passes the model, the chat messages and tools and the abort signal, and maps answers", async () => {
    const { ai, calls } = binding([
      { response: "tool said: ping", usage: { prompt_tokens: 12, completion_tokens: 3 } },
      { response: "", tool_calls: [{ name: "echo", arguments: { text: "ping" } }] },
    ]);
    const client = new ModelRoutes(
      builtinModels({ defaultModel: "scripted", ai, workersAiSdk: () => import("workers-ai-provider") }),
    ).client("workers-ai:@cf/meta/llama");
    const controller = new AbortController();
    const reply = await client.generate(request({ signal: controller.signal }));
    expect(reply).toMatchObject({ content: [{ type: "text", text: "tool said: ping" }], stopReason: "end" });
    expect(reply.usage).toEqual({ inputTokens: 12, outputTokens: 3 });
    expect(calls[0]!.model).toBe("@cf/meta/llama");
    const messages = calls[0]!.inputs.messages as { role: string; content: unknown }[];
    expect(messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "user"]);
    expect((calls[0]!.inputs.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual([
      "echo",
    ]);
    expect(calls[0]!.options.signal).toBeInstanceOf(AbortSignal);

    const called = await client.generate(request());
    expect(called.stopReason).toBe("tool-use");
    expect(called.toolCalls.map((c) => ({ name: c.name, args: c.args }))).toEqual([
      { name: "echo", args: { text: "ping" } },
    ]);
  });

  it("turns a binding failure into a ModelError", async () => {
    const { ai } = binding([new Error("5007: no such model")]);
    const client = new ModelRoutes(
      builtinModels({ defaultModel: "scripted", ai, workersAiSdk: () => import("workers-ai-provider") }),
    ).client("workers-ai:m");
    const error = await client.generate(request()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelError);
    expect((error as Error).message).toMatch(/5007: no such model/);
  });
});
