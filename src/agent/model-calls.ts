import * as z from "zod";
import { lazySchema } from "../contract/lazy";
import { untilAborted } from "../core/abort";
import { compact } from "../core/compact";
import { isContextOverflow, overflowDetails } from "./compaction";
import { abortableDelay, type ModelClient, ModelError, type ModelReply, type ModelRequest } from "./model";

/**
 * How one model step is called: a per-call timeout, and retries with exponential backoff and full
 * jitter on failures another attempt may fix (429, 5xx, network errors, timeouts), honouring the
 * provider's `Retry-After`. Every attempt is first claimed from a durable per-step budget
 * (`claimAttempt`), so a step that keeps failing, across crashes and restarts as well as within
 * one call, makes a bounded number of model calls before its turn ends as `error`.
 */
export interface ModelCallPolicy {
  /** Model calls one step may make in all, across restarts (MODEL_ATTEMPTS_PER_STEP). */
  attemptsPerStep: number;
  /** How long one call may take (MODEL_TIMEOUT_SECONDS). */
  timeoutMs: number;
  /** First backoff; doubles per retry up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_MODEL_CALL_POLICY: ModelCallPolicy = {
  attemptsPerStep: 4,
  timeoutMs: 300_000,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
};

/** A `Retry-After` longer than this is not waited for: the step fails now instead. */
const MAX_RETRY_AFTER_MS = 120_000;

/** A claimed attempt (and how many the step has left after it), or why there is none. */
export type AttemptClaim = { ok: true; attempt: number; remaining: number } | { ok: false; reason: string };

export interface ModelCallHooks {
  /** Claims the next attempt of this step from its durable budget, or says why not. */
  claimAttempt(lastError: string | undefined): AttemptClaim;
  /** Runs right before each call, once its attempt is claimed (the `before-model` fault point). */
  beforeCall?(): void | Promise<void>;
  /** Waits between attempts (a test may make it instant). */
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
  random?(): number;
}

/**
 * Calls the model until one attempt answers, a failure is final, the budget is spent or the
 * request's signal aborts (an interrupt: rethrown at once). Resolves with the reply or rejects
 * with the last failure, whose message is what the turn's `error` records.
 */
export async function callModel(
  client: ModelClient,
  request: ModelRequest,
  policy: ModelCallPolicy,
  hooks: ModelCallHooks,
): Promise<ModelReply> {
  const sleep = hooks.sleep ?? abortableDelay;
  const random = hooks.random ?? Math.random;
  let lastError: string | undefined;
  let claim = hooks.claimAttempt(undefined);
  for (let retry = 0; ; retry++) {
    if (!claim.ok) throw new ModelError(claim.reason);
    const timeoutMs = client.timeoutMs ?? policy.timeoutMs;
    const timeout = Number.isFinite(timeoutMs) ? AbortSignal.timeout(timeoutMs) : undefined;
    const signal = timeout ? AbortSignal.any([request.signal, timeout]) : request.signal;
    let failure: ModelError;
    try {
      await hooks.beforeCall?.();
      return checkedReply(await untilAborted(client.generate({ ...request, signal }), signal));
    } catch (error) {
      if (request.signal.aborted) throw error;
      failure = timeout?.aborted
        ? new ModelError(`the model call timed out after ${Math.round(timeoutMs / 1000)} s`, {
            retryable: true,
          })
        : asModelError(error);
    }
    lastError = failure.message;
    if (!failure.retryable) throw failure;
    const wait = retryDelay(failure, retry, policy, random);
    if (wait === undefined) throw failure;
    // the last attempt failed: no wait, the budget's own answer says so (and records the failure)
    if (claim.remaining > 0) await sleep(wait, request.signal);
    claim = hooks.claimAttempt(lastError);
  }
}

/** How long to wait before the next attempt: `Retry-After` when given, else backoff with full jitter. */
export function retryDelay(
  failure: ModelError,
  retry: number,
  policy: Pick<ModelCallPolicy, "baseDelayMs" | "maxDelayMs">,
  random: () => number = Math.random,
): number | undefined {
  const after = retryAfterMs(failure.retryAfter);
  if (after !== undefined) return after > MAX_RETRY_AFTER_MS ? undefined : after;
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** `Retry-After` as milliseconds: delta seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const Count = lazySchema(() => z.number().int().nonnegative().finite());
const Reply = lazySchema(() =>
  z.object({
    content: z.array(z.object({ type: z.literal("text"), text: z.string() })),
    toolCalls: z.array(
      z.object({ id: z.string().min(1).max(256), name: z.string().min(1).max(256), args: z.unknown() }),
    ),
    stopReason: z.enum(["end", "tool-use", "max-tokens", "refusal"]),
    usage: z
      .object({
        inputTokens: Count,
        outputTokens: Count,
        cachedInputTokens: Count.optional(),
        reasoningTokens: Count.optional(),
      })
      .optional(),
  }),
);

/**
 * A reply as the log may keep it: a client of the Worker's own that answers something else gets
 * a final `ModelError` naming what is wrong (its turn ends `error`), never a corrupt log.
 */
function checkedReply(reply: ModelReply): ModelReply {
  const parsed = Reply.safeParse(reply);
  if (parsed.success) {
    const { content, toolCalls, stopReason, usage } = parsed.data;
    const clean: ModelReply = {
      content: content.map((b) => ({ type: "text", text: b.text })),
      toolCalls: toolCalls.map((c) => ({ id: c.id, name: c.name, args: c.args ?? {} })),
      stopReason,
    };
    if (usage) clean.usage = compact(usage);
    return clean;
  }
  const issue = parsed.error.issues[0];
  throw new ModelError(
    `the model returned an invalid reply (${issue?.path.join(".") || "reply"}: ${issue?.message ?? "invalid"})`,
    { retryable: false },
  );
}

/**
 * Any failure as a `ModelError`. A user's client may throw anything: an error carrying an HTTP
 * `status` is classified by it; a `TypeError` (what `fetch` throws when the network fails) is
 * retryable; anything else is final.
 */
function asModelError(error: unknown): ModelError {
  if (error instanceof ModelError) return error;
  const e = error as
    | { message?: unknown; status?: unknown; statusCode?: unknown; code?: unknown }
    | undefined;
  const status =
    typeof e?.status === "number" ? e.status : typeof e?.statusCode === "number" ? e.statusCode : undefined;
  const message = typeof e?.message === "string" ? e.message : String(error);
  const code = typeof e?.code === "string" ? e.code : "";
  return new ModelError(message.slice(0, 1000), {
    ...(status === undefined ? {} : { status }),
    ...(isContextOverflow(status, `${code} ${message}`) ? overflowDetails(message) : {}),
    ...(status === undefined && error instanceof TypeError ? { retryable: true } : {}),
  });
}
