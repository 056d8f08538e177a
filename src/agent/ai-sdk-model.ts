import type { LanguageModelV2, LanguageModelV3, LanguageModelV4 } from "@ai-sdk/provider";
import type { ToolCall, Usage } from "../contract/events";
import type { ContentBlock } from "../contract/content";
import { isContextOverflow, overflowDetails } from "./compaction";
import { textOf } from "../contract/content";
import {
  type ConversationMessage,
  type ModelClient,
  ModelError,
  type ModelReply,
  type ModelRequest,
  type ModelStopReason,
} from "./model";

/**
 * Any Vercel AI SDK language model (`@ai-sdk/openai`, `@ai-sdk/anthropic`, `@ai-sdk/google`,
 * `workers-ai-provider`, `@ai-sdk/openai-compatible`, ...; specification v2, v3 or v4) as a
 * `ModelClient`. One call is one model step: the adapter streams one response from the provider
 * (`doStream`), hands its text to `onTextDelta` as it arrives and returns the step's content, tool
 * calls, stop reason and usage. It never runs tools, never loops and never retries: the durable
 * turn driver does all three (model-calls.ts retries).
 *
 * It talks to the provider through the AI SDK's provider specification rather than through
 * `streamText`: the specification is the interface every provider implements, and `streamText`'s
 * own step loop, tool execution and retries are exactly what the turn driver must not delegate
 * (it would also add about 260 KB to a Worker's bundle, measured with esbuild).
 */
export type AiSdkLanguageModel = LanguageModelV4 | LanguageModelV3 | LanguageModelV2;

export interface AiSdkModelOptions {
  /** Passed to every call (e.g. `{ anthropic: { thinking: { type: "enabled", budgetTokens: 1024 } } }`). */
  providerOptions?: Record<string, Record<string, unknown>>;
}

/** The call options all three specification versions accept (they agree on this subset). */
interface StepCall {
  prompt: unknown[];
  tools?: { type: "function"; name: string; description: string; inputSchema: Record<string, unknown> }[];
  toolChoice?: { type: "auto" };
  maxOutputTokens?: number;
  temperature?: number;
  abortSignal: AbortSignal;
  providerOptions?: Record<string, Record<string, unknown>>;
}

interface StreamingModel {
  readonly provider: string;
  readonly modelId: string;
  doStream(options: StepCall): PromiseLike<{ stream: ReadableStream<unknown> }>;
}

/**
 * The three specification versions type their call options apart, so their union has no
 * signature TypeScript can call; each accepts the subset StepCall sends (tested against v2 and v4
 * models and the real openai-compatible and workers-ai providers). What is checked at run time is
 * that the value has a `doStream` to call.
 */
function isStreamingModel(model: unknown): model is StreamingModel {
  return typeof model === "object" && model !== null && typeof Reflect.get(model, "doStream") === "function";
}

export function aiSdkModel(model: AiSdkLanguageModel, options: AiSdkModelOptions = {}): ModelClient {
  if (!isStreamingModel(model))
    throw new TypeError("aiSdkModel: not an AI SDK language model (it has no doStream)");
  const streaming = model;
  return {
    async generate(request: ModelRequest): Promise<ModelReply> {
      const call: StepCall = {
        prompt: promptOf(request.system, request.history()),
        abortSignal: request.signal,
        ...(request.tools.length > 0
          ? {
              tools: request.tools.map((t) => ({
                type: "function" as const,
                name: t.name,
                description: t.description,
                inputSchema: t.parameters,
              })),
              toolChoice: { type: "auto" as const },
            }
          : {}),
        ...(request.params?.maxOutputTokens !== undefined
          ? { maxOutputTokens: request.params.maxOutputTokens }
          : {}),
        ...(request.params?.temperature !== undefined ? { temperature: request.params.temperature } : {}),
        ...(options.providerOptions ? { providerOptions: options.providerOptions } : {}),
      };
      let stream: ReadableStream<unknown>;
      try {
        ({ stream } = await streaming.doStream(call));
      } catch (error) {
        throw modelErrorOf(error, streaming.provider);
      }
      return readStep(stream, request, streaming.provider);
    },
  };
}

/** The conversation in the provider specification's prompt shape. */
function promptOf(system: string | undefined, history: readonly ConversationMessage[]): unknown[] {
  const prompt: unknown[] = system ? [{ role: "system", content: system }] : [];
  for (const message of history) {
    if (message.role === "user") {
      prompt.push({ role: "user", content: message.content.map((b) => ({ type: "text", text: b.text })) });
    } else if (message.role === "assistant") {
      const text = textOf(message.content);
      prompt.push({
        role: "assistant",
        content: [
          ...(text.length > 0 ? [{ type: "text", text }] : []),
          ...message.toolCalls.map((c) => ({
            type: "tool-call",
            toolCallId: c.id,
            toolName: c.name,
            input: c.args ?? {},
          })),
        ],
      });
    } else {
      const value = textOf(message.content);
      prompt.push({
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: message.toolCallId,
            toolName: message.name,
            output: message.isError ? { type: "error-text", value } : { type: "text", value },
          },
        ],
      });
    }
  }
  return prompt;
}

interface StreamPart {
  type: string;
  delta?: unknown;
  textDelta?: unknown;
  toolCallId?: unknown;
  toolName?: unknown;
  input?: unknown;
  args?: unknown;
  finishReason?: unknown;
  usage?: unknown;
  error?: unknown;
}

async function readStep(
  stream: ReadableStream<unknown>,
  request: ModelRequest,
  provider: string,
): Promise<ModelReply> {
  let text = "";
  const toolCalls: ToolCall[] = [];
  let finish: string | undefined;
  let usage: Usage | undefined;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const part = value as StreamPart;
      switch (part.type) {
        case "text-delta": {
          const delta = typeof part.delta === "string" ? part.delta : String(part.textDelta ?? "");
          if (delta.length === 0) break;
          text += delta;
          request.onTextDelta?.(delta);
          break;
        }
        case "tool-call":
          toolCalls.push({
            id: typeof part.toolCallId === "string" && part.toolCallId ? part.toolCallId : newToolCallId(),
            name: String(part.toolName ?? ""),
            args: argsOf(part.input ?? part.args),
          });
          break;
        case "finish":
          finish = unifiedReason(part.finishReason);
          usage = usageOf(part.usage);
          break;
        case "error":
          throw modelErrorOf(part.error, provider);
        default:
          break; // reasoning, sources, metadata, raw chunks: not part of the step's reply
      }
    }
  } catch (error) {
    if (error instanceof ModelError || request.signal.aborted) throw error;
    throw modelErrorOf(error, provider);
  } finally {
    reader.releaseLock();
  }
  if (finish === undefined) throw new ModelError(`${provider}: the response stream ended without finishing`);
  const content: ContentBlock[] = text.length > 0 ? [{ type: "text", text }] : [];
  const reply: ModelReply = { content, toolCalls, stopReason: stopReasonOf(finish, toolCalls) };
  if (usage) reply.usage = usage;
  return reply;
}

function unifiedReason(reason: unknown): string {
  if (typeof reason === "string") return reason;
  if (reason && typeof reason === "object" && "unified" in reason) return String(reason.unified);
  return "other";
}

function stopReasonOf(finish: string, toolCalls: readonly ToolCall[]): ModelStopReason {
  if (toolCalls.length > 0) return "tool-use";
  if (finish === "length") return "max-tokens";
  if (finish === "content-filter") return "refusal";
  if (finish === "error") throw new ModelError("the model stopped with an error");
  return "end";
}

function argsOf(input: unknown): unknown {
  if (typeof input !== "string") return input ?? {};
  if (input.trim() === "") return {};
  try {
    return JSON.parse(input);
  } catch {
    return input; // the tool's schema check turns this into an error result the model can read
  }
}

/** Usage of any specification version (v2: flat numbers; v3 and v4: `{ total, ... }` per side). */
function usageOf(raw: unknown): Usage | undefined {
  if (!raw || typeof raw !== "object") return undefined;
  const u = raw as Record<string, unknown>;
  const side = (value: unknown): Record<string, unknown> =>
    value && typeof value === "object" ? (value as Record<string, unknown>) : { total: value };
  const input = side(u.inputTokens);
  const output = side(u.outputTokens);
  const count = (value: unknown): number | undefined =>
    typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
  const inputTokens = count(input.total);
  const outputTokens = count(output.total);
  if (inputTokens === undefined && outputTokens === undefined) return undefined;
  const usage: Usage = { inputTokens: inputTokens ?? 0, outputTokens: outputTokens ?? 0 };
  const cached = count(input.cacheRead) ?? count(u.cachedInputTokens);
  const reasoning = count(output.reasoning) ?? count(u.reasoningTokens);
  // zero is what most providers report when they do not know: only a real count is kept
  if (cached) usage.cachedInputTokens = cached;
  if (reasoning) usage.reasoningTokens = reasoning;
  return usage;
}

/**
 * A provider failure as a `ModelError` whose message is safe for the log: the status and the
 * provider's short message, with anything that looks like a credential removed, never the
 * request or the response body. Status and `Retry-After` are kept for the retry policy.
 */
export function modelErrorOf(error: unknown, provider: string): ModelError {
  if (error instanceof ModelError) return error;
  const e = (error ?? {}) as {
    message?: unknown;
    statusCode?: unknown;
    responseHeaders?: Record<string, string>;
    isRetryable?: unknown;
    name?: unknown;
    responseBody?: unknown;
  };
  const status = typeof e.statusCode === "number" ? e.statusCode : undefined;
  const message = redact(typeof e.message === "string" ? e.message : String(error)).slice(0, 300);
  // the provider's error code (OpenAI's `context_length_exceeded`) is in the body, not the message
  const body = typeof e.responseBody === "string" ? e.responseBody.slice(0, 4096) : "";
  if (isContextOverflow(status, `${message} ${body}`))
    return new ModelError(`${provider}${status === undefined ? "" : ` answered ${status}`}: ${message}`, {
      ...(status === undefined ? {} : { status }),
      ...overflowDetails(`${message} ${body}`),
    });
  const retryAfter = e.responseHeaders?.["retry-after"] ?? e.responseHeaders?.["Retry-After"];
  return new ModelError(`${provider}${status === undefined ? "" : ` answered ${status}`}: ${message}`, {
    ...(status === undefined ? {} : { status }),
    ...(retryAfter === undefined ? {} : { retryAfter }),
    // the provider's own verdict, else the status decides; a request that never got an answer
    // (a network failure) is worth another try
    ...(e.isRetryable === true
      ? { retryable: true }
      : status === undefined
        ? { retryable: e.name !== "AbortError" }
        : {}),
  });
}

/** Bearer tokens, `sk-...` style keys and `key=...` pairs, wherever a provider echoes them. */
function redact(text: string): string {
  return text
    .replace(/bearer\s+[^\s"',}]+/gi, "Bearer [redacted]")
    .replace(/\b(sk|pk|rk|key|api[_-]?key)[-_][A-Za-z0-9_-]{8,}/gi, "[redacted]")
    .replace(/((?:api[_-]?key|token|authorization)["']?\s*[:=]\s*["']?)[^\s"',}]+/gi, "$1[redacted]");
}

function newToolCallId(): string {
  return `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
}
