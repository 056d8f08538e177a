import { nodeHttp, type ServerResponse } from "./node-http.ts";

/**
 * A small, deterministic OpenAI-compatible chat-completions server for tests. It runs in Node (the
 * vitest main process, started by `globalSetup`), never inside workerd, so the Worker under test
 * reaches it over real HTTP through its ordinary outbound `fetch`.
 *
 *   POST /v1/chat/completions   answers by the last message (see `answer` below)
 *   GET  /__requests?since=<n>  every request recorded so far (from index n), for assertions
 *
 * Behaviour, by the last message of the request:
 *   user "use the tool"  -> a `tool_calls` message calling `echo` with {"text":"ping"}, finish "tool_calls"
 *   user "keep using the tool" (anywhere in the conversation) -> every answer calls `echo` again:
 *                           a turn that only a step budget or a token budget ends
 *   user "be long"       -> a partial text, finish "length"
 *   user "fail please"   -> HTTP 500 whose body echoes the Authorization header back (as some
 *                           gateways do), so tests can prove the adapter keeps the key out of the log
 *   user "flaky <x>"     -> the first request with this text: HTTP 503 (`Retry-After: 0`); later ones answer
 *   user "rate limited <x>" -> the first request with this text: HTTP 429 with `Retry-After: 1`
 *   user "hang once <x>" -> the first request with this text is never answered (a call timeout)
 *   user "hang always <x>" -> never answered
 *   user "stream slowly <x>" -> the normal answer, streamed one word per 150 ms
 *   any other user text  -> "hello from fake: <text>", finish "stop"
 *   a tool message       -> "tool said: <tool content>", finish "stop"
 *   a summarizing request (a system message that asks to compact the conversation) -> a short
 *                           summary: "summary of <N> characters: <the first 300>"
 * A model named `ctx-<N>` has a context window of N tokens, counted as OpenAI bills them roughly
 * (a token per four characters of the messages and tools, four per message): a longer request is
 * refused exactly as OpenAI refuses it (400, `invalid_request_error`, `param: "messages"`, code
 * `context_length_exceeded`, the message stating the window), and an answered one reports that
 * count as `prompt_tokens`. A `ctxq-<N>` model refuses alike with a message that does not state
 * it. Other models report one prompt token per message.
 * When started with an `apiKey`, a request whose Authorization is not `Bearer <apiKey>` gets 401.
 * A request with `"stream": true` is answered as server-sent events (`chat.completion.chunk`s, the
 * usage in a last chunk when `stream_options.include_usage` is set, then `data: [DONE]`).
 *
 * `node:http` is loaded at run time and typed structurally (node-http.ts).
 */

export const FAKE_OPENAI_API_KEY = "test-openai-key";

export interface RecordedRequest {
  index: number;
  method: string;
  path: string;
  /** Whether the Authorization header was the expected bearer key ("none" when no key is configured). */
  auth: "ok" | "missing" | "wrong" | "none";
  status: number;
  body: unknown;
  /** When the request arrived (epoch ms). */
  at: number;
}

export interface FakeOpenAiServer {
  /** e.g. `http://127.0.0.1:40123/v1`, what `OPENAI_BASE_URL` should be. */
  baseUrl: string;
  port: number;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

interface ChatMessage {
  role?: unknown;
  content?: unknown;
  tool_call_id?: unknown;
}

// plain fields, no parameter properties: the end-to-end tests load this file in Node, which strips
// types but does not transform TypeScript-only syntax
class HttpError extends Error {
  readonly status: number;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;
  constructor(
    status: number,
    message: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = status;
    this.extra = extra;
    this.headers = headers;
  }
}

/** Texts whose first request already failed ("flaky", "rate limited", "hang once"). */
const failedOnce = new Set<string>();

/** How an answer is sent: at once, slowly (streamed words apart), or never. */
type Delivery = "normal" | "slow" | "never";

function deliveryOf(body: unknown): Delivery {
  const messages = (body as { messages?: ChatMessage[] } | null)?.messages;
  const last = Array.isArray(messages) ? messages[messages.length - 1] : undefined;
  const said = last?.role === "user" ? contentText(last.content) : "";
  if (said.startsWith("stream slowly")) return "slow";
  if (said.startsWith("hang always")) return "never";
  if (said.startsWith("hang once") && !failedOnce.has(said)) {
    failedOnce.add(said);
    return "never";
  }
  return "normal";
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part: { text?: unknown }) => (typeof part?.text === "string" ? part.text : ""))
      .join("");
  }
  return "";
}

function offersEcho(tools: unknown): boolean {
  return (
    Array.isArray(tools) &&
    tools.some(
      (t: { type?: unknown; function?: { name?: unknown } }) =>
        t?.type === "function" && t.function?.name === "echo",
    )
  );
}

/** A `ctx-<N>` (or `ctxq-<N>`) model's context window, in tokens. */
function windowOf(model: string): number | undefined {
  const match = /^ctxq?-(\d+)$/.exec(model);
  return match ? Number(match[1]) : undefined;
}

/** The request's size in tokens: four characters a token, four tokens a message. */
function countTokens(messages: readonly ChatMessage[], tools: unknown): number {
  let chars = tools === undefined ? 0 : JSON.stringify(tools).length;
  for (const m of messages) {
    chars += 16 + contentText(m.content).length;
    const calls = (m as { tool_calls?: unknown }).tool_calls;
    if (calls !== undefined) chars += JSON.stringify(calls).length;
  }
  return Math.ceil(chars / 4);
}

function completion(
  index: number,
  model: string,
  prompt: { messages: ChatMessage[]; tokens?: number },
  message: Record<string, unknown>,
  finish: string,
) {
  const { messages } = prompt;
  const answer = typeof message.content === "string" ? message.content : "";
  return {
    id: `chatcmpl-${index}`,
    object: "chat.completion",
    created: 1_700_000_000,
    model,
    choices: [
      { index: 0, message: { role: "assistant", ...message }, finish_reason: finish, logprobs: null },
    ],
    usage: {
      prompt_tokens: prompt.tokens ?? messages.length,
      completion_tokens: answer.split(/\s+/).filter(Boolean).length,
      total_tokens: (prompt.tokens ?? messages.length) + answer.split(/\s+/).filter(Boolean).length,
    },
  };
}

/** The deterministic model: what to answer to one chat-completions body. */
function answer(index: number, body: unknown, authorization: string): unknown {
  if (typeof body !== "object" || body === null) throw new HttpError(400, "body must be a JSON object");
  const { model, messages, tools } = body as { model?: unknown; messages?: unknown; tools?: unknown };
  if (typeof model !== "string" || model.length === 0) throw new HttpError(400, "model is required");
  if (!Array.isArray(messages) || messages.length === 0)
    throw new HttpError(400, "messages must be a non-empty array");
  if (tools !== undefined && !Array.isArray(tools)) throw new HttpError(400, "tools must be an array");
  const last = messages[messages.length - 1] as ChatMessage;
  const window = windowOf(model);
  const prompt = { messages, ...(window === undefined ? {} : { tokens: countTokens(messages, tools) }) };
  if (window !== undefined && prompt.tokens! > window)
    throw new HttpError(
      400,
      model.startsWith("ctxq-")
        ? "The prompt is too long for this model."
        : `This model's maximum context length is ${window} tokens. However, your messages resulted in ${prompt.tokens} tokens. Please reduce the length of the messages.`,
      { param: "messages", code: "context_length_exceeded" },
    );
  const first = messages[0] as ChatMessage;
  if (first.role === "system" && /compact the conversation/i.test(contentText(first.content))) {
    const text = contentText(last.content);
    return completion(
      index,
      model,
      prompt,
      { content: `summary of ${text.length} characters: ${text.slice(0, 300)}` },
      "stop",
    );
  }

  if (messages.some((m) => m.role === "user" && contentText(m.content) === "keep using the tool")) {
    if (!offersEcho(tools)) throw new HttpError(400, "the echo tool was not offered");
    const call = {
      id: `call_${index}`,
      type: "function",
      function: { name: "echo", arguments: '{"text":"again"}' },
    };
    return completion(index, model, prompt, { content: null, tool_calls: [call] }, "tool_calls");
  }
  if (last.role === "tool") {
    if (typeof last.tool_call_id !== "string") throw new HttpError(400, "a tool message needs tool_call_id");
    const text = `tool said: ${contentText(last.content)}`;
    return completion(index, model, prompt, { content: text }, "stop");
  }
  if (last.role !== "user")
    throw new HttpError(400, `the last message must be user or tool, got ${String(last.role)}`);

  const said = contentText(last.content);
  switch (said) {
    case "use the tool":
      if (!offersEcho(tools)) throw new HttpError(400, "the echo tool was not offered");
      return completion(
        index,
        model,
        prompt,
        {
          content: null,
          tool_calls: [
            {
              id: `call_${index}`,
              type: "function",
              function: { name: "echo", arguments: '{"text":"ping"}' },
            },
          ],
        },
        "tool_calls",
      );
    case "be long":
      return completion(index, model, prompt, { content: "this answer is cut" }, "length");
    case "fail please":
      throw new HttpError(500, "fake failure", { received_authorization: authorization });
  }
  if (said.startsWith("flaky") && !failedOnce.has(said)) {
    failedOnce.add(said);
    throw new HttpError(503, "fake overload", {}, { "retry-after": "0" });
  }
  if (said.startsWith("rate limited") && !failedOnce.has(said)) {
    failedOnce.add(said);
    throw new HttpError(429, "fake rate limit", {}, { "retry-after": "1" });
  }
  switch (said) {
    default:
      return completion(index, model, prompt, { content: `hello from fake: ${said}` }, "stop");
  }
}

function send(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): number {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(value));
  return status;
}

interface Completion {
  id: string;
  created: number;
  model: string;
  choices: { message: { content?: unknown; tool_calls?: unknown[] }; finish_reason: string }[];
  usage: unknown;
}

/** A completion as the server-sent events of a streaming answer, words `delayMs` apart. */
async function sendStream(
  res: ServerResponse,
  completion: Completion,
  includeUsage: boolean,
  delayMs: number,
): Promise<number> {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const base = {
    id: completion.id,
    object: "chat.completion.chunk",
    created: completion.created,
    model: completion.model,
  };
  const event = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`);
  const choice = completion.choices[0]!;
  event([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]);
  const text = typeof choice.message.content === "string" ? choice.message.content : "";
  for (const word of text.match(/\S+\s*/g) ?? []) {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    event([{ index: 0, delta: { content: word }, finish_reason: null }]);
  }
  for (const [index, call] of (choice.message.tool_calls ?? []).entries())
    event([{ index: 0, delta: { tool_calls: [{ index, ...(call as object) }] }, finish_reason: null }]);
  event([{ index: 0, delta: {}, finish_reason: choice.finish_reason }]);
  if (includeUsage) event([], { usage: completion.usage });
  res.end("data: [DONE]\n\n");
  return 200;
}

export async function startOpenAiServer(
  options: { apiKey?: string; host?: string; port?: number } = {},
): Promise<FakeOpenAiServer> {
  const http = await nodeHttp();
  const host = options.host ?? "127.0.0.1";
  const requests: RecordedRequest[] = [];

  const server = http.createServer((req, res) => {
    const chunks: Uint8Array[] = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("error", () => send(res, 400, { error: { message: "request stream failed" } }));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", `http://${host}`);
      if (req.method === "GET" && url.pathname === "/__requests") {
        const since = Number(url.searchParams.get("since") ?? "0");
        send(res, 200, { count: requests.length, requests: requests.slice(since) });
        return;
      }
      if (req.method !== "POST" || url.pathname !== "/v1/chat/completions") {
        send(res, 404, { error: { message: `no route ${req.method} ${url.pathname}`, type: "not_found" } });
        return;
      }
      const raw = new TextDecoder().decode(concat(chunks));
      const authorization = typeof req.headers.authorization === "string" ? req.headers.authorization : "";
      const auth: RecordedRequest["auth"] =
        options.apiKey === undefined
          ? "none"
          : authorization === ""
            ? "missing"
            : authorization === `Bearer ${options.apiKey}`
              ? "ok"
              : "wrong";
      const index = requests.length;
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
      const record: RecordedRequest = {
        index,
        method: req.method,
        path: url.pathname,
        auth,
        status: 0,
        body,
        at: Date.now(),
      };
      requests.push(record);
      if (auth === "missing" || auth === "wrong") {
        record.status = send(res, 401, {
          error: {
            message: "Incorrect API key provided",
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        });
        return;
      }
      if (typeof body === "string") {
        record.status = send(res, 400, {
          error: { message: "malformed JSON", type: "invalid_request_error" },
        });
        return;
      }
      const delivery = deliveryOf(body);
      if (delivery === "never") {
        record.status = -1; // left hanging: the caller's timeout ends it
        return;
      }
      let completion: unknown;
      try {
        completion = answer(index, body, authorization);
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        const type = error.status >= 500 ? "server_error" : "invalid_request_error";
        record.status = send(
          res,
          error.status,
          { error: { ...error.extra, message: error.message, type } },
          error.headers,
        );
        return;
      }
      const { stream, stream_options } = body as {
        stream?: unknown;
        stream_options?: { include_usage?: unknown };
      };
      if (stream === true) {
        record.status = 200;
        void sendStream(
          res,
          completion as Completion,
          stream_options?.include_usage === true,
          delivery === "slow" ? 150 : 0,
        );
      } else {
        record.status = send(res, 200, completion);
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.on("error", reject);
    server.listen(options.port ?? 0, host, resolve);
  });
  const address = server.address();
  if (address === null || typeof address === "string")
    throw new Error("the fake OpenAI server has no TCP port");
  return {
    baseUrl: `http://${host}:${address.port}/v1`,
    port: address.port,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections?.();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** What `globalSetup` provides; the pool options in vitest.config.ts `inject` it into bindings. */
export interface FakeOpenAiContext {
  baseUrl: string;
  apiKey: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    fakeOpenAi: FakeOpenAiContext;
  }
}

/**
 * vitest `globalSetup`: starts the server on a free loopback port chosen by the OS and provides its
 * address to the Workers pool options (see vitest.config.ts); stops it when the run ends.
 */
export default async function setup(project: {
  provide(key: "fakeOpenAi", value: FakeOpenAiContext): void;
}): Promise<() => Promise<void>> {
  const server = await startOpenAiServer({ apiKey: FAKE_OPENAI_API_KEY });
  project.provide("fakeOpenAi", { baseUrl: server.baseUrl, apiKey: FAKE_OPENAI_API_KEY });
  return () => server.close();
}
