import { z } from "zod";
import type { ContentBlock } from "../contract/content";
import type { SubagentResult, SubagentStopReason } from "../contract/run";
import { capDiagnostic } from "../core/run-result";
import { scrub } from "./remote-protocol";

/**
 * @module The Agent Client Protocol (ACP, protocol version 1) as the client side speaks it, pure:
 * JSON-RPC 2.0 messages for `initialize`, `session/new`, `session/prompt` and the `session/cancel`
 * notification; reading the agent's `session/update` notifications (only `agent_message_chunk`
 * text becomes output) and answers; mapping the prompt's `stopReason` (semantics.md §12.4). No I/O here.
 */

export const ACP_PROTOCOL_VERSION = 1;

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** Where an ACP agent server listens: wss/https, or ws/http to a loopback host (tests only). */
export const AcpUrl = z
  .string()
  .max(2048)
  .refine((raw) => {
    if (!URL.canParse(raw)) return false;
    const url = new URL(raw);
    if (url.protocol === "wss:" || url.protocol === "https:") return true;
    return (url.protocol === "ws:" || url.protocol === "http:") && LOOPBACK.test(url.hostname);
  }, "must be wss or https (ws or http only to a loopback host)");

/** The http(s) URL a WebSocket upgrade is fetched from (Workers upgrade over fetch). */
export function upgradeUrl(url: string): string {
  return url.replace(/^ws(s?):/i, "http$1:");
}

export function request(id: number, method: string, params: unknown): string {
  return JSON.stringify({ jsonrpc: "2.0", id, method, params });
}

export function notification(method: string, params: unknown): string {
  return JSON.stringify({ jsonrpc: "2.0", method, params });
}

export function initializeParams(): unknown {
  return {
    protocolVersion: ACP_PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  };
}

export function newSessionParams(): unknown {
  return { cwd: "/", mcpServers: [] };
}

export function promptParams(sessionId: string, prompt: readonly ContentBlock[]): unknown {
  const text = prompt
    .filter((b): b is Extract<ContentBlock, { type: "text" }> => b.type === "text")
    .map((b) => b.text)
    .join("\n");
  return { sessionId, prompt: [{ type: "text", text }] };
}

/** One incoming message, classified. */
export type Incoming =
  | { kind: "answer"; id: number; result: unknown }
  | { kind: "failure"; id: number; error: string }
  | { kind: "chunk"; text: string }
  | { kind: "request"; id: string | number; method: string }
  | { kind: "other" };

const Message = z.looseObject({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string(), z.number()]).nullish(),
  method: z.string().optional(),
  params: z.unknown().optional(),
  result: z.unknown().optional(),
  error: z.looseObject({ code: z.number().optional(), message: z.string().optional() }).optional(),
});

const ChunkParams = z.looseObject({
  update: z.looseObject({
    sessionUpdate: z.literal("agent_message_chunk"),
    content: z.looseObject({ type: z.literal("text"), text: z.string() }),
  }),
});

/** Classifies one frame; `undefined` for a frame that is not JSON-RPC 2.0 at all. */
export function readMessage(raw: string): Incoming | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const message = Message.safeParse(parsed);
  if (!message.success) return undefined;
  const { id, method, params, result, error } = message.data;
  if (method !== undefined) {
    if (id !== undefined && id !== null) return { kind: "request", id, method };
    if (method !== "session/update") return { kind: "other" };
    const chunk = ChunkParams.safeParse(params);
    return chunk.success ? { kind: "chunk", text: chunk.data.update.content.text } : { kind: "other" };
  }
  if (typeof id !== "number") return { kind: "other" };
  if (error !== undefined) {
    const code = error.code === undefined ? "" : ` ${error.code}`;
    return { kind: "failure", id, error: `JSON-RPC error${code}: ${error.message ?? "no message"}` };
  }
  return { kind: "answer", id, result };
}

/** The client's answer to a request from the agent: permissions are refused, nothing else exists. */
export function answerAgentRequest(id: string | number, method: string): string {
  if (method === "session/request_permission")
    return JSON.stringify({ jsonrpc: "2.0", id, result: { outcome: { outcome: "cancelled" } } });
  return JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32601, message: `${method} is not offered` } });
}

const STOP: Record<string, SubagentStopReason> = {
  end_turn: "completed",
  max_tokens: "max-tokens",
  refusal: "refusal",
  cancelled: "aborted",
};

/** The run's result from the prompt's answer (semantics.md §12.4); anything unknown is `error`. */
export function promptResult(result: unknown, output: string, secrets: readonly string[]): SubagentResult {
  const stop = z.looseObject({ stopReason: z.string() }).safeParse(result);
  const blocks: ContentBlock[] = output.length === 0 ? [] : [{ type: "text", text: output }];
  const reason = stop.success ? STOP[stop.data.stopReason] : undefined;
  if (reason !== undefined) return { output: blocks, stopReason: reason };
  const said = stop.success ? `stop reason ${stop.data.stopReason}` : "an unreadable prompt answer";
  return failedResult(`the ACP agent ended with ${said}`, output, secrets);
}

/** A transport failure, flattened: `error` (or `aborted` after cancellation) with a bounded diagnostic. */
export function failedResult(
  diagnostic: string,
  output: string,
  secrets: readonly string[],
  stopReason: "error" | "aborted" = "error",
): SubagentResult {
  return {
    output: output.length === 0 ? [] : [{ type: "text", text: output }],
    stopReason,
    diagnostic: capDiagnostic(scrub(diagnostic, secrets)),
  };
}
