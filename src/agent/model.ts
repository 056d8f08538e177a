import type { ContentBlock } from "../contract/content";
import type { MessageSource, ToolCall, Usage } from "../contract/events";

/** One message of the model-visible conversation, rebuilt from the session log. */
export type ConversationMessage =
  | { role: "user"; content: ContentBlock[]; source: MessageSource }
  | { role: "assistant"; content: ContentBlock[]; toolCalls: ToolCall[] }
  | { role: "tool"; toolCallId: string; name: string; content: ContentBlock[]; isError: boolean };

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON schema of the tool's arguments. */
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  /** The route the session was configured with, e.g. `scripted` or `openai:gpt-4o-mini`. */
  model: string;
  system?: string;
  /** The messages of the current turn, oldest first. */
  turn: ConversationMessage[];
  /** The whole conversation including the current turn; read lazily because it can be long. */
  history(): ConversationMessage[];
  tools: ToolSpec[];
  signal: AbortSignal;
}

export type ModelStopReason = "end" | "tool-use" | "max-tokens" | "refusal";

export interface ModelReply {
  content: ContentBlock[];
  toolCalls: ToolCall[];
  stopReason: ModelStopReason;
  usage?: Usage;
}

/** The port every model adapter implements. A thrown error ends the turn with reason `error`. */
export interface ModelClient {
  generate(request: ModelRequest): Promise<ModelReply>;
}

/** A model failure whose message is safe to record in the log (no credentials, no payloads). */
export class ModelError extends Error {
  override readonly name = "ModelError";
}

export function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
