/**
 * @module The client SDK of the subagents runtime: typed methods for every route of the public
 * HTTP API, `SubagentError`s built from the error envelope, and a reconnecting event stream.
 * Uses only `fetch` and `WebSocket` (browsers, Workers, Node 22+). See docs/client.md.
 */
export { type ClientOptions, SubagentsClient, sessionOfToken } from "./client";
export {
  type ApiErrorCode,
  type ClientErrorCode,
  ERROR_STATUS,
  type ErrorCode,
  type ErrorIssue,
  errorFromResponse,
  isSubagentError,
  SubagentError,
} from "./errors";
export {
  EventStream,
  STREAM_PROTOCOL,
  type SocketEvent,
  type StreamOptions,
  type StreamState,
  type WebSocketFactory,
  type WebSocketLike,
} from "./stream";
export {
  type SpanAttributeValue,
  attributeOf,
  type OtlpAttribute,
  type OtlpResourceSpans,
  type OtlpScopeSpans,
  type OtlpSpan,
  type OtlpSpanKind,
  type OtlpStatus,
  type OtlpTrace,
  type OtlpValue,
  spansOfTrace,
} from "./trace";
export type { CallOptions, FetchLike } from "./transport";
export * from "./types";
