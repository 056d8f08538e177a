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

/** Sampling parameters of a session (its create or start request; children inherit them). */
export interface ModelParams {
  temperature?: number;
  maxOutputTokens?: number;
}

/**
 * Why a model is called: `step` for a step of a turn; `compaction` for writing the summary that
 * replaces the older part of a session's view (README "Long sessions"). A compaction request has no
 * tools, `system` is the summarizing instruction and `turn` one user message holding the replaced
 * conversation as text; the reply's text is the summary.
 */
export type ModelPurpose = "step" | "compaction";

export interface ModelRequest {
  /** The route the session was configured with, e.g. `scripted` or `openai:gpt-4o-mini`. */
  model: string;
  /** Absent means `step` (a client written before compaction existed sees only steps). */
  purpose?: ModelPurpose;
  system?: string;
  /** The messages of the current turn, oldest first (cut like the rest of the view). */
  turn: ConversationMessage[];
  /**
   * The session's view, the current turn included: the latest compaction's summary (as a first user
   * message, also in `summary`), then every conversation message after it, oldest first. Bounded
   * by the session's context window; a single message too large for it is cut with a marker.
   */
  history(): ConversationMessage[];
  /** The latest compaction's summary when the view starts with one. */
  summary?: string;
  /** The session's context window in tokens (README "Long sessions"). */
  contextWindow?: number;
  tools: ToolSpec[];
  /** The session's sampling parameters; a client passes on the ones its model supports. */
  params?: ModelParams;
  /**
   * Aborted by an interrupt or when the call times out. A client passes it to its HTTP calls;
   * one that ignores it is left behind (its late answer is dropped).
   */
  signal: AbortSignal;
  /**
   * Live text of this step while it is generated, for the session's stream subscribers (never
   * logged: the reply's content is what the log keeps). A client that streams calls it per chunk.
   */
  onTextDelta?(text: string): void;
}

export type ModelStopReason = "end" | "tool-use" | "max-tokens" | "refusal";

export interface ModelReply {
  content: ContentBlock[];
  toolCalls: ToolCall[];
  stopReason: ModelStopReason;
  usage?: Usage;
}

/**
 * The port every model adapter implements: one call is one model step. A thrown `ModelError`
 * marked retryable (a 429, a 5xx, a network failure) is retried with backoff (model-calls.ts);
 * any other error, or a step that keeps failing, ends the turn with reason `error`.
 */
export interface ModelClient {
  generate(request: ModelRequest): Promise<ModelReply>;
  /**
   * This client's own per-call timeout in ms, over MODEL_TIMEOUT_SECONDS (a slow reasoning model
   * may want more); `Infinity` for none (`scripted`, whose `think` steps wait on purpose).
   */
  readonly timeoutMs?: number;
  /**
   * The context window in tokens of the model behind this client, when it knows it: a session
   * without its own `contextWindow` uses it before the deployment's DEFAULT_CONTEXT_WINDOW.
   */
  readonly contextWindow?: number;
}

export interface ModelErrorDetails {
  /** The provider's HTTP status, when it answered. */
  status?: number;
  /** The provider's `Retry-After` (seconds or an HTTP date), honoured by the retry policy. */
  retryAfter?: string;
  /** Whether another attempt may succeed; default: a 408, 409, 429 or 5xx status. */
  retryable?: boolean;
  /**
   * The model refused the request as longer than its context window: the session compacts and
   * runs the step again once (never retried as it was). Detected from the provider's answer
   * (`contextOverflow` in compaction.ts) when a client does not say.
   */
  contextOverflow?: boolean;
  /** With `contextOverflow`: the model's own window in tokens, when its answer says it. */
  contextLimit?: number;
}

/** A model failure whose message is safe to record in the log (no credentials, no payloads). */
export class ModelError extends Error {
  override readonly name = "ModelError";
  readonly status: number | undefined;
  readonly retryAfter: string | undefined;
  readonly retryable: boolean;
  readonly contextOverflow: boolean;
  readonly contextLimit: number | undefined;

  constructor(message: string, details: ModelErrorDetails = {}) {
    super(message);
    this.status = details.status;
    this.retryAfter = details.retryAfter;
    this.contextOverflow = details.contextOverflow === true;
    this.contextLimit = details.contextLimit;
    this.retryable =
      !this.contextOverflow &&
      (details.retryable ??
        (details.status !== undefined &&
          (details.status === 408 ||
            details.status === 409 ||
            details.status === 429 ||
            details.status >= 500)));
  }
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
