import { describe, expect, it } from "vitest";
import type { ConversationMessage, ModelRequest } from "../../../src/agent/model";
import { type AiBinding, WorkersAiModel } from "../../../src/agent/workers-ai-model";

/** The Workers AI adapter against a hand-written AI binding, pure: no session, no network. */

describe("WorkersAiModel with a hand-written AI binding", () => {
  interface Call {
    model: string;
    inputs: Record<string, unknown>;
    options: Record<string, unknown> | undefined;
  }

  function binding(answers: unknown[]): { ai: AiBinding; calls: Call[] } {
    const calls: Call[] = [];
    return {
      calls,
      ai: {
        async run(model, inputs, options) {
          calls.push({ model, inputs, options });
          if (answers.length === 0) throw new Error("no scripted answer left");
          const next = answers.shift();
          if (next instanceof Error) throw next;
          return next;
        },
      },
    };
  }

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
  ];

  function modelRequest(signal = new AbortController().signal): ModelRequest {
    return {
      model: "workers-ai:@cf/meta/llama-3.3-70b-instruct-fp8-fast",
      system: "be brief",
      turn: history,
      history: () => history,
      tools: [
        {
          name: "echo",
          description: "Returns the given text unchanged.",
          parameters: {
            $schema: "https://json-schema.org/draft/2020-12/schema",
            type: "object",
            properties: { text: { type: "string" } },
            required: ["text"],
          },
        },
      ],
      signal,
    };
  }

  it("passes the model name, chat messages, tools and the abort signal to the binding", async () => {
    const { ai, calls } = binding([
      { response: "tool said: ping", usage: { prompt_tokens: 12, completion_tokens: 3 } },
    ]);
    const controller = new AbortController();
    const reply = await new WorkersAiModel(ai, "@cf/meta/llama-3.3-70b-instruct-fp8-fast").generate(
      modelRequest(controller.signal),
    );

    expect(calls).toHaveLength(1);
    expect(calls[0]!.model).toBe("@cf/meta/llama-3.3-70b-instruct-fp8-fast");
    expect(calls[0]!.inputs).toEqual({
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "use the tool" },
        {
          role: "assistant",
          content: "",
          tool_calls: [
            { id: "call_a", type: "function", function: { name: "echo", arguments: '{"text":"ping"}' } },
          ],
        },
        { role: "tool", tool_call_id: "call_a", content: "ping" },
      ],
      tools: [
        {
          type: "function",
          function: {
            name: "echo",
            description: "Returns the given text unchanged.",
            parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
          },
        },
      ],
    });
    expect(calls[0]!.options?.signal).toBe(controller.signal);
    expect(reply).toEqual({
      content: [{ type: "text", text: "tool said: ping" }],
      toolCalls: [],
      stopReason: "end",
      usage: { inputTokens: 12, outputTokens: 3 },
    });
  });

  it("sends no tools key when the session has no tools", async () => {
    const { ai, calls } = binding([{ response: "ok" }]);
    await new WorkersAiModel(ai, "m").generate({ ...modelRequest(), tools: [] });
    expect(Object.keys(calls[0]!.inputs)).toEqual(["messages"]);
  });

  it("maps the legacy {name, arguments} tool calls, giving each a unique id", async () => {
    const { ai } = binding([
      {
        response: "",
        tool_calls: [
          { name: "echo", arguments: { text: "ping" } },
          { name: "echo", arguments: '{"text":"pong"}' },
        ],
      },
      { tool_calls: [{ name: "echo", arguments: { text: "again" } }] },
    ]);
    const model = new WorkersAiModel(ai, "m");
    const reply = await model.generate(modelRequest());
    expect(reply.stopReason).toBe("tool-use");
    expect(reply.content).toEqual([]);
    expect(reply.toolCalls.map((c) => ({ name: c.name, args: c.args }))).toEqual([
      { name: "echo", args: { text: "ping" } },
      { name: "echo", args: { text: "pong" } },
    ]);
    const later = await model.generate(modelRequest());
    const ids = [...reply.toolCalls, ...later.toolCalls].map((c) => c.id);
    for (const id of ids) expect(id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(new Set(ids).size).toBe(3);
  });

  it("maps {id, type, function} tool calls and keeps their ids", async () => {
    const { ai } = binding([
      {
        response: null,
        tool_calls: [
          {
            id: "chatcmpl-tool-1",
            type: "function",
            function: { name: "echo", arguments: '{"text":"ping"}' },
          },
        ],
      },
    ]);
    const reply = await new WorkersAiModel(ai, "m").generate(modelRequest());
    expect(reply).toEqual({
      content: [],
      toolCalls: [{ id: "chatcmpl-tool-1", name: "echo", args: { text: "ping" } }],
      stopReason: "tool-use",
    });
  });

  it("maps chat-completions shaped answers (choices, finish_reason)", async () => {
    const { ai } = binding([
      {
        choices: [
          {
            finish_reason: "tool_calls",
            message: {
              content: null,
              tool_calls: [
                { id: "t1", type: "function", function: { name: "echo", arguments: '{"text":"x"}' } },
              ],
            },
          },
        ],
        usage: { prompt_tokens: 5, completion_tokens: 2 },
      },
      { choices: [{ finish_reason: "length", message: { content: "cut" } }] },
    ]);
    const model = new WorkersAiModel(ai, "m");
    expect(await model.generate(modelRequest())).toEqual({
      content: [],
      toolCalls: [{ id: "t1", name: "echo", args: { text: "x" } }],
      stopReason: "tool-use",
      usage: { inputTokens: 5, outputTokens: 2 },
    });
    expect(await model.generate(modelRequest())).toEqual({
      content: [{ type: "text", text: "cut" }],
      toolCalls: [],
      stopReason: "max-tokens",
    });
  });

  it("turns binding failures and odd bodies into safe model errors", async () => {
    const { ai } = binding([new Error("5007: no such model"), { unexpected: true }]);
    const model = new WorkersAiModel(ai, "m");
    await expect(model.generate(modelRequest())).rejects.toThrow(
      "workers ai call failed: 5007: no such model",
    );
    await expect(model.generate(modelRequest())).rejects.toThrow(
      "workers ai answered with an unexpected body",
    );
  });
});
