import { z } from "zod";
import { textOf } from "../contract/content";
import type { ToolCall } from "../contract/events";
import type {
  ConversationMessage,
  ModelClient,
  ModelReply,
  ModelRequest,
  ModelStopReason,
  ToolSpec,
} from "./model";
import { ModelError } from "./model";

/**
 * An adapter for any OpenAI-compatible `/chat/completions` server (OpenAI, Ollama, vLLM, Workers
 * AI's compatible endpoint). Non-streaming; tool calls map to `ToolCall`s with the server's ids.
 * Errors never carry the request, the key or the raw response body beyond a short excerpt.
 */

export interface OpenAiConfig {
  baseUrl: string;
  apiKey?: string;
  /** The model name sent to the server (the part after `openai:`). */
  model: string;
  fetch?: typeof fetch;
}

const ChatResponse = z.object({
  choices: z
    .array(
      z.object({
        finish_reason: z.string().nullish(),
        message: z.object({
          content: z.string().nullish(),
          refusal: z.string().nullish(),
          tool_calls: z
            .array(
              z.object({
                // Some compatible servers omit the id or send ""; one is generated then.
                id: z.string().nullish(),
                type: z.literal("function").nullish(),
                // The spec says a JSON string; a few servers send the object itself.
                function: z.object({
                  name: z.string(),
                  arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
                }),
              }),
            )
            .nullish(),
        }),
      }),
    )
    .min(1),
  usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number() }).nullish(),
});

type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: unknown[] }
  | { role: "tool"; tool_call_id: string; content: string };

export function toChatMessages(
  system: string | undefined,
  history: readonly ConversationMessage[],
): ChatMessage[] {
  const out: ChatMessage[] = system ? [{ role: "system", content: system }] : [];
  for (const m of history) {
    if (m.role === "user") out.push({ role: "user", content: textOf(m.content) });
    else if (m.role === "tool")
      out.push({ role: "tool", tool_call_id: m.toolCallId, content: textOf(m.content) });
    else {
      const text = textOf(m.content);
      out.push(
        m.toolCalls.length === 0
          ? { role: "assistant", content: text }
          : {
              role: "assistant",
              content: text.length > 0 ? text : null,
              tool_calls: m.toolCalls.map((c) => ({
                id: c.id,
                type: "function",
                function: { name: c.name, arguments: JSON.stringify(c.args ?? {}) },
              })),
            },
      );
    }
  }
  return out;
}

export function toChatTools(tools: readonly ToolSpec[]): unknown[] {
  return tools.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: withoutSchemaKeyword(t.parameters) },
  }));
}

/**
 * zod's JSON schema starts with a `$schema` keyword; strict servers (Gemini's OpenAI-compatible
 * endpoint among them) reject tool parameters that carry it, and no server needs it.
 */
function withoutSchemaKeyword(parameters: Record<string, unknown>): Record<string, unknown> {
  if (!("$schema" in parameters)) return parameters;
  const { $schema: _dropped, ...rest } = parameters;
  return rest;
}

/** A fresh tool call id, for servers that send none (ids must be unique within a conversation). */
export function newToolCallId(): string {
  return `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
}

/** Removes credentials from text that came back from a server (some gateways echo request headers). */
export function redactSecrets(text: string, secret: string | undefined): string {
  let out = secret ? text.split(secret).join("[redacted]") : text;
  out = out.replace(/(bearer\s+)[^\s"',;]+/gi, "$1[redacted]");
  return out;
}

function mapFinish(reason: string | null | undefined, hasTools: boolean): ModelStopReason {
  if (hasTools) return "tool-use";
  if (reason === "length") return "max-tokens";
  if (reason === "content_filter") return "refusal";
  return "end";
}

function parseArgs(raw: string | Record<string, unknown> | null | undefined): unknown {
  if (raw === null || raw === undefined || raw === "") return {};
  if (typeof raw !== "string") return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return { __unparsable: raw.slice(0, 200) }; // the tool registry reports it as invalid arguments
  }
}

export class OpenAiModel implements ModelClient {
  constructor(private readonly config: OpenAiConfig) {}

  async generate(request: ModelRequest): Promise<ModelReply> {
    const doFetch = this.config.fetch ?? fetch;
    const body: Record<string, unknown> = {
      model: this.config.model,
      messages: toChatMessages(request.system, request.history()),
    };
    if (request.tools.length > 0) body.tools = toChatTools(request.tools);
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.config.apiKey) headers.authorization = `Bearer ${this.config.apiKey}`;

    let response: Response;
    try {
      response = await doFetch(`${this.config.baseUrl.replace(/\/+$/, "")}/chat/completions`, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: request.signal,
      });
    } catch (error) {
      if (request.signal.aborted) throw error;
      throw new ModelError(
        `model server unreachable: ${error instanceof Error ? error.name : "fetch failed"}`,
      );
    }
    if (!response.ok) {
      // Redact before cutting, so a key split by the cut cannot survive in part.
      const excerpt = redactSecrets(await response.text().catch(() => ""), this.config.apiKey).slice(0, 200);
      throw new ModelError(`model server answered ${response.status}: ${excerpt}`);
    }
    const parsed = ChatResponse.safeParse(await response.json().catch(() => undefined));
    if (!parsed.success) throw new ModelError("model server answered with an unexpected body");
    return toReply(parsed.data);
  }
}

function toReply(data: z.infer<typeof ChatResponse>): ModelReply {
  const choice = data.choices[0]!;
  const toolCalls: ToolCall[] = (choice.message.tool_calls ?? []).map((c) => ({
    id: c.id ? c.id : newToolCallId(),
    name: c.function.name,
    args: parseArgs(c.function.arguments),
  }));
  const text = choice.message.content ?? "";
  const reply: ModelReply = {
    content: text.length > 0 ? [{ type: "text", text }] : [],
    toolCalls,
    stopReason: choice.message.refusal ? "refusal" : mapFinish(choice.finish_reason, toolCalls.length > 0),
  };
  if (data.usage)
    reply.usage = { inputTokens: data.usage.prompt_tokens, outputTokens: data.usage.completion_tokens };
  return reply;
}
