/** Branded identifiers: a session id is a UUID; message and run ids are opaque strings. */

export type SessionId = string & { readonly __brand: "SessionId" };
export type MessageId = string & { readonly __brand: "MessageId" };
export type RunId = string & { readonly __brand: "RunId" };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

export function isSessionId(value: unknown): value is SessionId {
  return typeof value === "string" && UUID.test(value);
}

export function newMessageId(): MessageId {
  return `msg_${crypto.randomUUID()}` as MessageId;
}

export function newRunId(): RunId {
  return crypto.randomUUID() as RunId;
}

/**
 * A message id derived from a SHA-256 hex digest (same digest, same id): for a message that a
 * retried operation must send again under the same id, such as a report its tool call re-runs.
 */
export function messageIdFromDigest(hex: string): MessageId {
  const h = hex.slice(0, 32).padEnd(32, "0");
  return `msg_${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-9${h.slice(17, 20)}-${h.slice(20, 32)}` as MessageId;
}
