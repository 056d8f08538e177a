/**
 * How the exporter reads a collector's answer and when it tries again (README "Traces", export).
 * Pure: the clock and the randomness come in as arguments.
 *
 * - 2xx: the batch was accepted; spans a `partialSuccess` says were rejected are counted as
 *   dropped, never sent again (OTLP/HTTP: a partial success must not be retried).
 * - 408, 429, every 5xx, and no answer at all (refused connection, reset, the request timeout):
 *   the same batch is tried again later, with exponential backoff and jitter (1 s doubling to
 *   5 min, each delay drawn between half and all of it); a `Retry-After` on a 429 or 503 is
 *   honoured instead (at least 1 s, at most 1 h).
 * - any other 4xx: the collector will never take this batch; it is dropped and counted.
 * - anything else (1xx, 3xx: the exporter follows no redirect): tried again like a 5xx.
 */

export const BACKOFF = { baseMs: 1_000, capMs: 5 * 60_000 };
/** The range a collector's Retry-After is held to. */
export const RETRY_AFTER = { minMs: 1_000, maxMs: 3600_000 };
/** One export request may take this long before it counts as failed. */
export const EXPORT_TIMEOUT_MS = 10_000;

/** The durable retry state (flag `trace:retry`): failed tries of the current batch, and when the next is due. */
export interface RetryState {
  attempts: number;
  at: number;
}

export type ExportAnswer =
  | { kind: "accepted"; rejected: number }
  | { kind: "refused"; status: number }
  | { kind: "retry"; afterMs: number | undefined; why: string };

/** The delay before try `attempt + 1` after `attempt` failed tries (`random` in [0, 1)). */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF.capMs, BACKOFF.baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** The retry state after one more failed try. */
export function nextRetry(
  previous: RetryState | undefined,
  afterMs: number | undefined,
  now: number,
  random: () => number = Math.random,
): RetryState {
  const attempts = (previous?.attempts ?? 0) + 1;
  const delay =
    afterMs === undefined
      ? backoffMs(attempts, random)
      : Math.min(RETRY_AFTER.maxMs, Math.max(RETRY_AFTER.minMs, afterMs));
  return { attempts, at: now + delay };
}

/** A `Retry-After` value (delay-seconds or an HTTP-date) as milliseconds from `now`; undefined if unreadable. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // an HTTP-date names its day and month ("Wed, 21 Oct 2026 07:28:00 GMT")
  const at = /[a-z]/i.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * A collector's answer: its status, its `Retry-After` header and its body (an
 * `ExportTraceServiceResponse` in JSON; anything else counts as an empty one).
 */
export function readAnswer(
  status: number,
  retryAfter: string | null,
  body: unknown,
  now: number,
): ExportAnswer {
  if (status >= 200 && status < 300) return { kind: "accepted", rejected: rejectedSpans(body) };
  const afterMs = status === 429 || status === 503 ? retryAfterMs(retryAfter, now) : undefined;
  if (status === 408 || status === 429 || status >= 500 || status < 400)
    return { kind: "retry", afterMs, why: `HTTP ${status}` };
  return { kind: "refused", status };
}

/** `partialSuccess.rejectedSpans` of an OTLP JSON answer (an int64: a number or a decimal string). */
function rejectedSpans(body: unknown): number {
  if (typeof body !== "object" || body === null) return 0;
  const partial = (body as { partialSuccess?: unknown }).partialSuccess;
  if (typeof partial !== "object" || partial === null) return 0;
  const rejected = Number((partial as { rejectedSpans?: unknown }).rejectedSpans ?? 0);
  return Number.isSafeInteger(rejected) && rejected > 0 ? rejected : 0;
}

/** A stored retry state (the flag's JSON); undefined if absent or unreadable. */
export function parseRetry(value: string | undefined): RetryState | undefined {
  if (value === undefined) return undefined;
  try {
    const { attempts, at } = JSON.parse(value) as Partial<RetryState>;
    if (Number.isSafeInteger(attempts) && typeof at === "number" && Number.isFinite(at))
      return { attempts: attempts!, at };
  } catch {
    // unreadable: as if no try had failed
  }
  return undefined;
}
