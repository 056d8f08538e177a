import { z } from "zod";
import type { ToolCall } from "../contract/events";
import type { ModelClient, ModelReply, ModelRequest } from "./model";
import { ModelError } from "./model";
import { toChatMessages, toChatTools } from "./openai-model";

/** The slice of the Workers AI binding this adapter uses (kept structural so `src/` stays portable). */
export interface AiBinding {
  run(model: string, inputs: Record<string, unknown>, options?: Record<string, unknown>): Promise<unknown>;
}

const AiResponse = z.object({
  response: z.string().nullish(),
  tool_calls: z
    .array(z.object({ id: z.string().optional(), name: z.string(), arguments: z.unknown().optional() }))
    .nullish(),
  usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number() }).nullish(),
});

/** Adapter for the Workers AI binding (`workers-ai:<model>`), with function calling. */
export class WorkersAiModel implements ModelClient {
  constructor(
    private readonly ai: AiBinding,
    private readonly model: string,
  ) {}

  async generate(request: ModelRequest): Promise<ModelReply> {
    const inputs: Record<string, unknown> = { messages: toChatMessages(request.system, request.history()) };
    if (request.tools.length > 0) inputs.tools = toChatTools(request.tools);
    let raw: unknown;
    try {
      raw = await this.ai.run(this.model, inputs, { signal: request.signal });
    } catch (error) {
      if (request.signal.aborted) throw error;
      throw new ModelError(`workers ai call failed: ${error instanceof Error ? error.message.slice(0, 200) : "unknown"}`);
    }
    const parsed = AiResponse.safeParse(raw);
    if (!parsed.success) throw new ModelError("workers ai answered with an unexpected body");
    const toolCalls: ToolCall[] = (parsed.data.tool_calls ?? []).map((c, i) => ({
      id: c.id ?? `call_${i}`,
      name: c.name,
      args: typeof c.arguments === "string" ? safeJson(c.arguments) : (c.arguments ?? {}),
    }));
    const text = parsed.data.response ?? "";
    const reply: ModelReply = {
      content: text ? [{ type: "text", text }] : [],
      toolCalls,
      stopReason: toolCalls.length > 0 ? "tool-use" : "end",
    };
    if (parsed.data.usage) {
      reply.usage = { inputTokens: parsed.data.usage.prompt_tokens, outputTokens: parsed.data.usage.completion_tokens };
    }
    return reply;
  }
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return { __unparsable: raw.slice(0, 200) };
  }
}
