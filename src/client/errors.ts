/**
 * Typed failures on the client side. Every non-2xx answer of the API is the envelope
 * `{"error": {"code", "message", "issues"?}}`; the client turns it into a `SubagentError` that
 * carries the HTTP status and the stable code. Transport problems (no answer, a body that is not
 * the envelope) get a client-side code so callers can always branch on `code`.
 */

/** Codes the API documents (docs/api.md), with their HTTP status. */
export const ERROR_STATUS = {
  MALFORMED_JSON: 400,
  INVALID_REQUEST: 400,
  INVALID_MAX_DEPTH: 400,
  INVALID_SCHEMA: 400,
  UNAUTHENTICATED: 401,
  UNAUTHORIZED: 403,
  NOT_FOUND: 404,
  NO_PROVIDER: 404,
  DUPLICATE_PROVIDER: 409,
  DUPLICATE_CHILD: 409,
  DRAINING: 409,
  ACTIVATION_CLOSING: 409,
  REPLAYED: 409,
  ALREADY_DECIDED: 409,
  SCOPE_NOT_OFFERED: 409,
  OUT_OF_ORDER: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_CAPABILITY: 422,
  DEPTH_EXCEEDED: 422,
  NOT_RESUMABLE: 422,
  IDEMPOTENCY_KEY_REUSED: 422,
  BUDGET_EXCEEDED: 422,
  QUOTA_EXCEEDED: 422,
  RATE_LIMITED: 429,
  INBOX_FULL: 429,
  TOO_MANY_SUBSCRIBERS: 429,
  INTERNAL: 500,
  MISCONFIGURED: 500,
  PARENT_UNAVAILABLE: 503,
  OVERLOADED: 503,
} as const;

export type ApiErrorCode = keyof typeof ERROR_STATUS;

/** Raised by the client itself: the request never got an answer, or the answer was not the envelope. */
export type ClientErrorCode = "NETWORK_ERROR" | "TIMEOUT" | "ABORTED" | "BAD_RESPONSE" | "STREAM_CLOSED";

/** A code from the server this SDK does not know yet is still passed through as a string. */
export type ErrorCode = ApiErrorCode | ClientErrorCode | (string & {});

export interface ErrorIssue {
  path: string[];
  message: string;
  code?: string;
}

export class SubagentError extends Error {
  override readonly name = "SubagentError";
  /** The HTTP status, or 0 when there was no HTTP answer (client-side codes). */
  readonly status: number;
  readonly code: ErrorCode;
  /** Validation issues of an `INVALID_REQUEST`. */
  readonly issues: readonly ErrorIssue[] | undefined;

  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    issues?: readonly ErrorIssue[],
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.status = status;
    this.code = code;
    this.issues = issues;
  }

  /** True for answers a retry may fix (429, 503, transport failures). */
  get retryable(): boolean {
    return this.status === 0 ? this.code !== "ABORTED" : this.status === 429 || this.status >= 500;
  }

  /** `CODE (status): message`, plus the first issues of an invalid request. */
  describe(): string {
    const head = `${this.code}${this.status ? ` (${this.status})` : ""}: ${this.message}`;
    const issues = (this.issues ?? [])
      .slice(0, 5)
      .map((i) => `${i.path.join(".") || "body"}: ${i.message}`)
      .join("; ");
    return issues && !this.message.includes(issues) ? `${head} [${issues}]` : head;
  }
}

export function isSubagentError(value: unknown, code?: ErrorCode): value is SubagentError {
  return value instanceof SubagentError && (code === undefined || value.code === code);
}

/** Builds the typed error of a non-2xx response from its body text (the envelope, if it is one). */
export function errorFromResponse(status: number, text: string): SubagentError {
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  const error = (parsed as { error?: unknown } | undefined)?.error;
  if (error && typeof error === "object") {
    const { code, message, issues } = error as { code?: unknown; message?: unknown; issues?: unknown };
    if (typeof code === "string") {
      return new SubagentError(
        status,
        code,
        typeof message === "string" ? message : code,
        Array.isArray(issues) ? (issues as ErrorIssue[]) : undefined,
      );
    }
  }
  const snippet = text.slice(0, 200);
  return new SubagentError(status, "BAD_RESPONSE", `HTTP ${status}${snippet ? `: ${snippet}` : ""}`);
}
