import { z } from "zod";
import type { ToolCall } from "../contract/events";
import type { ModelClient, ModelReply, ModelRequest, ModelStopReason } from "./model";
import { ModelError } from "./model";
import { newToolCallId, toChatMessages, toChatTools } from "./openai-model";

/** The slice of the Workers AI binding this adapter uses (kept structural so `src/` stays portable). */
export interface AiBinding {
  run(model: string, inputs: Record<string, unknown>, options?: Record<string, unknown>): Promise<unknown>;
}

const Usage = z.object({ prompt_tokens: z.number(), completion_tokens: z.number() }).nullish();
const Args = z.unknown().optional();

/** `{name, arguments}` (older function-calling models) or `{id, type, function: {name, arguments}}`. */
const AiToolCall = z.union([
  z.object({
    id: z.string().nullish(),
    type: z.string().nullish(),
    function: z.object({ name: z.string(), arguments: Args }),
  }),
  z.object({ id: z.string().nullish(), name: z.string(), arguments: Args }),
]);

/** The text-generation output most models return. */
const AiResponse = z
  .object({
    response: z.string().nullish(),
    tool_calls: z.array(AiToolCall).nullish(),
    usage: Usage,
  })
  .refine((r) => r.response !== undefined || r.tool_calls !== undefined, "neither response nor tool_calls");

/** Models that answer in the chat-completions shape (e.g. the OpenAI open-weight models). */
const AiChatCompletion = z.object({
  choices: z
    .array(
      z.object({
        finish_reason: z.string().nullish(),
        message: z.object({ content: z.string().nullish(), tool_calls: z.array(AiToolCall).nullish() }),
      }),
    )
    .min(1),
  usage: Usage,
});

/** Adapter for the Workers AI binding (`workers-ai:<model>`), with function calling. */
export class WorkersAiModel implements ModelClient {
  constructor(
    private readonly ai: AiBinding,
    private readonly model: string,
  ) {}

  async generate(request: ModelRequest): Promise<ModelReply> {
    // The binding's input schemas type `content` as a string (never null), tool-call turns included.
    const messages = toChatMessages(request.system, request.history()).map((m) =>
      m.content === null ? { ...m, content: "" } : m,
    );
    const inputs: Record<string, unknown> = { messages };
    if (request.tools.length > 0) inputs.tools = toChatTools(request.tools);
    let raw: unknown;
    try {
      raw = await this.ai.run(this.model, inputs, { signal: request.signal });
    } catch (error) {
      if (request.signal.aborted) throw error;
      throw new ModelError(
        `workers ai call failed: ${error instanceof Error ? error.message.slice(0, 200) : "unknown"}`,
      );
    }
    const chat = AiChatCompletion.safeParse(raw);
    if (chat.success) {
      const choice = chat.data.choices[0]!;
      return toReply(
        choice.message.content,
        choice.message.tool_calls,
        choice.finish_reason,
        chat.data.usage,
      );
    }
    const parsed = AiResponse.safeParse(raw);
    if (!parsed.success) throw new ModelError("workers ai answered with an unexpected body");
    return toReply(parsed.data.response, parsed.data.tool_calls, undefined, parsed.data.usage);
  }
}

function toReply(
  text: string | null | undefined,
  calls: z.infer<typeof AiToolCall>[] | null | undefined,
  finish: string | null | undefined,
  usage: z.infer<typeof Usage>,
): ModelReply {
  const toolCalls: ToolCall[] = (calls ?? []).map((c) => {
    const fn = "function" in c ? c.function : c;
    // Older models send no id: a fresh one keeps ids unique within the conversation (call keys
    // and tool results are matched by id, so `call_0` twice in one turn would collide).
    return { id: c.id ? c.id : newToolCallId(), name: fn.name, args: toArgs(fn.arguments) };
  });
  let stopReason: ModelStopReason = "end";
  if (toolCalls.length > 0) stopReason = "tool-use";
  else if (finish === "length") stopReason = "max-tokens";
  else if (finish === "content_filter") stopReason = "refusal";
  const reply: ModelReply = { content: text ? [{ type: "text", text }] : [], toolCalls, stopReason };
  if (usage) reply.usage = { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens };
  return reply;
}

function toArgs(raw: unknown): unknown {
  if (raw === undefined || raw === null || raw === "") return {};
  if (typeof raw !== "string") return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return { __unparsable: raw.slice(0, 200) };
  }
}
