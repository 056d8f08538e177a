/**
 * @module Typed failures. Expected failures are values with a stable UPPER_SNAKE code; they cross
 * RPC boundaries as `Failure` data (RPC keeps only an error's message and name) and become a
 * `SubagentError` again on the caller's side. Exceptions are for bugs and infrastructure.
 */

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
  OUT_OF_ORDER: 409,
  ACTIVATION_CLOSING: 409,
  REPLAYED: 409,
  ALREADY_DECIDED: 409,
  SCOPE_NOT_OFFERED: 409,
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

export type ErrorCode = keyof typeof ERROR_STATUS;

/** One problem found in a request: where (`path`), what (`message`) and the validator's `code`. */
export interface Issue {
  readonly path: readonly string[];
  readonly message: string;
  readonly code: string;
}

export interface Failure {
  readonly ok: false;
  readonly code: ErrorCode;
  readonly message: string;
  readonly issues?: readonly Issue[];
}

export interface Success<T> {
  readonly ok: true;
  readonly value: T;
}

/** The result of every RPC method that can fail for an expected reason. */
export type Outcome<T> = Success<T> | Failure;

export function ok<T>(value: T): Success<T> {
  return { ok: true, value };
}

export function fail(code: ErrorCode, message: string, issues?: readonly Issue[]): Failure {
  return issues === undefined ? { ok: false, code, message } : { ok: false, code, message, issues };
}

export class SubagentError extends Error {
  override readonly name = "SubagentError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly issues?: readonly Issue[],
  ) {
    super(message);
  }

  static from(failure: Failure): SubagentError {
    return new SubagentError(failure.code, failure.message, failure.issues);
  }

  toFailure(): Failure {
    return fail(this.code, this.message, this.issues);
  }
}

/** Unwraps an outcome, throwing its failure as a `SubagentError`. */
export function unwrap<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  throw SubagentError.from(outcome);
}
