import { OperatorUrl } from "../contract/wire";
import { compact } from "../core/compact";
import * as z from "zod";
import { lazySchema } from "../contract/lazy";
import { type ContentBlock, isEmptyContent, MAX_CONTENT_BLOCKS } from "../contract/content";
import { TextBlock } from "../contract/content-schema";
import type { SubagentResult, SubagentStopReason } from "../contract/run";
import { capDiagnostic, oneShotResult } from "../core/run-result";

/**
 * @module The wire protocol between two deployments of this runtime (remote delegation), pure:
 * how a callback is signed and checked, what its body and the remote's answers look like, how a
 * remote session's events become a result, and how transport failures read. No I/O here.
 *
 * Callback authentication: the parent mints a random secret per run and hands it to the remote
 * at creation. The remote signs `<timestamp>.<body>` with HMAC-SHA256 under that secret and sends
 * `x-subagents-timestamp` (unix seconds) and `x-subagents-signature: v1=<hex>`. The parent
 * refuses a bad signature and a timestamp more than five minutes away; a replay of a good one is
 * refused because the result it carries was already applied (the run-result envelope's id).
 */

export const TIMESTAMP_HEADER = "x-subagents-timestamp";
export const SIGNATURE_HEADER = "x-subagents-signature";
/** How far a callback's timestamp may be from the parent's clock, either way. */
export const REPLAY_WINDOW_SECONDS = 300;
const SIGNATURE_PREFIX = "v1=";

/** The idempotency key of everything a parent asks a remote for one run (create, prompt). */
export function remoteKey(runId: string): string {
  return `run:${runId}`;
}

/** The parent's callback route for one run. */
export function callbackUrl(publicUrl: string, parentId: string, runId: string): string {
  return `${publicUrl.replace(/\/+$/, "")}/v1/callbacks/${parentId}/${runId}`;
}

/** A per-run callback secret: 32 random bytes, base64url. */
export function newCallbackSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

async function hmacKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign", "verify"],
  );
}

/** The signature header value for a body sent at `timestamp` (unix seconds). */
export async function signCallback(secret: string, timestamp: number, body: string): Promise<string> {
  const mac = await crypto.subtle.sign(
    "HMAC",
    await hmacKey(secret),
    new TextEncoder().encode(`${timestamp}.${body}`),
  );
  return SIGNATURE_PREFIX + [...new Uint8Array(mac)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export type CallbackCheck = "ok" | "malformed" | "stale" | "bad-signature";

/** Checks a callback's timestamp (replay window) and signature (constant time, by WebCrypto). */
export async function verifyCallback(input: {
  secret: string;
  timestamp: string | null;
  signature: string | null;
  body: string;
  nowMs: number;
}): Promise<CallbackCheck> {
  const { timestamp, signature } = input;
  if (timestamp === null || signature === null || !/^\d{1,12}$/.test(timestamp)) return "malformed";
  if (!signature.startsWith(SIGNATURE_PREFIX) || !/^[0-9a-f]{64}$/.test(signature.slice(3)))
    return "malformed";
  const seconds = Number(timestamp);
  if (Math.abs(input.nowMs / 1000 - seconds) > REPLAY_WINDOW_SECONDS) return "stale";
  const mac = new Uint8Array(32);
  for (let i = 0; i < 32; i++) mac[i] = Number.parseInt(signature.slice(3 + 2 * i, 5 + 2 * i), 16);
  const valid = await crypto.subtle.verify(
    "HMAC",
    await hmacKey(input.secret),
    mac,
    new TextEncoder().encode(`${seconds}.${input.body}`),
  );
  return valid ? "ok" : "bad-signature";
}

/** A result as another deployment sends it (unknown stop reasons are kept and read as failures). */
export const WireResult = lazySchema(() =>
  z.strictObject({
    output: z.array(TextBlock).max(MAX_CONTENT_BLOCKS),
    structured: z.unknown().optional(),
    stopReason: z.string().min(1).max(64),
    diagnostic: z.string().max(65_536).optional(),
  }),
);

/** The body of a callback: which remote session answers, and its first turn's result. */
export const CallbackBody = lazySchema(() =>
  z.strictObject({
    v: z.literal(1),
    session: z.string().min(1).max(128),
    result: WireResult,
  }),
);
export type CallbackBody = z.infer<typeof CallbackBody>;

/** What the parent needs from the remote's `POST /v1/sessions` answer (it ignores the rest). */
export const RemoteCreated = lazySchema(() =>
  z.object({
    id: z.string().min(1).max(128),
    jurisdiction: z.string().optional(),
  }),
);

/** A page of the remote session's events, as far as the parent reads them. */
export const RemoteEventPage = lazySchema(() =>
  z.object({
    events: z.array(z.object({ seq: z.number().int().min(0), type: z.string(), data: z.unknown() })).max(500),
    next: z.number().int().nullable(),
  }),
);
export type RemoteEventPage = z.infer<typeof RemoteEventPage>;

/** The error envelope another deployment answers with, when it does. */
export const RemoteError = lazySchema(() => z.object({ error: z.object({ code: z.string().max(64) }) }));

const KNOWN: readonly string[] = ["completed", "aborted", "error", "max-tokens", "refusal"];

/**
 * A remote result as the parent records it: unknown stop reasons become `error`; after a local
 * cancellation anything becomes `aborted` (output kept); the diagnostic is bounded and never
 * carries the credentials of this run.
 */
export function localResult(
  wire: z.infer<typeof WireResult>,
  options: { cancelled: boolean; secrets: readonly string[] },
): SubagentResult {
  let stopReason: SubagentStopReason = KNOWN.includes(wire.stopReason)
    ? (wire.stopReason as SubagentStopReason)
    : "error";
  let diagnostic = wire.diagnostic;
  if (stopReason !== wire.stopReason) diagnostic ??= `the remote ended with stop reason ${wire.stopReason}`;
  if (options.cancelled) {
    stopReason = "aborted";
    diagnostic = "the run was cancelled by its parent";
  }
  const result: SubagentResult = { output: wire.output.map((b) => ({ ...b })), stopReason };
  if (stopReason === "completed" && wire.structured !== undefined) result.structured = wire.structured;
  if (diagnostic !== undefined && stopReason !== "completed")
    result.diagnostic = capDiagnostic(scrub(diagnostic, options.secrets));
  return result;
}

/** A run that ended without a result from the remote (unreachable, refused, cancelled early). */
export function transportResult(
  stopReason: "error" | "aborted",
  diagnostic: string,
  secrets: readonly string[],
): SubagentResult {
  return { output: [], stopReason, diagnostic: capDiagnostic(scrub(diagnostic, secrets)) };
}

/** Replaces every occurrence of a secret (a provider token, a callback secret) with a marker. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 4) out = out.split(secret).join("[redacted]");
  return out;
}

/** What polling has learned about the remote session's first turn so far. */
export interface PollState {
  cursor: number;
  /** The last non-empty assistant content seen (the result's output, semantics.md §3.2). */
  output: ContentBlock[] | null;
}

/**
 * Folds a page of the remote session's events into the poll state. Resolves the first turn's
 * result once its `turn/end` is in the page (the same mapping the remote uses for its callback).
 */
export function foldEvents(
  state: PollState,
  page: RemoteEventPage,
): { state: PollState; result?: z.infer<typeof WireResult> } {
  let { cursor, output } = state;
  for (const event of page.events) {
    if (event.seq <= cursor) continue;
    cursor = event.seq;
    if (event.type === "assistant/message") {
      const content = assistantContent(event.data);
      if (content.length > 0 && !isEmptyContent(content)) output = content;
    } else if (event.type === "turn/end") {
      const end = TurnEnd.safeParse(event.data);
      const reason = end.success ? end.data.reason : "error";
      const error = end.success ? end.data.error : "the remote's turn end was unreadable";
      const result = oneShotResult({
        assistant: output ? [output] : [],
        turnEnd: {
          reason: (KNOWN.includes(reason) ? reason : "error") as SubagentStopReason,
          ...compact({ error }),
        },
        schemaRequested: false,
      });
      return { state: { cursor, output }, result };
    }
  }
  return { state: { cursor, output } };
}

const TurnEnd = lazySchema(() => z.object({ reason: z.string(), error: z.string().optional() }));
const AssistantData = lazySchema(() => z.object({ content: z.array(TextBlock) }));

function assistantContent(data: unknown): ContentBlock[] {
  const parsed = AssistantData.safeParse(data);
  return parsed.success ? parsed.data.content : [];
}

/**
 * Delay before poll number `polls` (0-based) of a far side: `firstMs` (1 s for a remote session,
 * which also calls back; 250 ms for an A2A task, which does not) doubling to 30 s.
 */
export function pollDelayMs(polls: number, firstMs = 1_000): number {
  return Math.min(30_000, firstMs * 2 ** Math.min(polls, 10));
}

/** Delay before retry `attempt` (1-based) of a failed call to a remote: 500 ms doubling to 30 s. */
export function retryDelayMs(attempt: number): number {
  return Math.min(30_000, 500 * 2 ** Math.max(0, attempt - 1));
}

/** Answers of the remote that no retry will change (the request itself is wrong or refused). */
export function isPermanent(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 409 && status !== 429;
}

/** Without REMOTE_DEADLINE_SECONDS: a remote with no successful answer for 10 minutes is gone. */
const DEFAULT_DEADLINE_SECONDS = 600;

/**
 * The deployment's remote settings: PUBLIC_URL (for callbacks; invalid or empty: polling only; the
 * operator's, so exempt from the outbound rule) and the deadline.
 */
export function remoteSettings(env: { PUBLIC_URL?: string; REMOTE_DEADLINE_SECONDS?: string }): {
  publicUrl: string | undefined;
  deadlineMs: number;
} {
  const url = OperatorUrl.safeParse(env.PUBLIC_URL);
  const seconds = Number(env.REMOTE_DEADLINE_SECONDS);
  return {
    publicUrl: url.success ? url.data : undefined,
    deadlineMs: (Number.isFinite(seconds) && seconds > 0 ? seconds : DEFAULT_DEADLINE_SECONDS) * 1000,
  };
}
