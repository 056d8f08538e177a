/**
 * Traces (README "Traces"): a span as the runtime projects it from a session's log
 * (src/trace/spans.ts), the trace context a turn continues, and the OTLP/HTTP JSON the API and
 * the exporter give (src/trace/otlp.ts).
 */

export type AttributeValue = string | number | boolean | string[];

export interface Span {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** `client` for a model call (it leaves the deployment), `internal` otherwise. */
  kind: "internal" | "client";
  /** Epoch ms. */
  start: number;
  end: number;
  attributes: Record<string, AttributeValue>;
  /** A failure's message (the span's status is then an error). */
  error?: string;
}

/** Where a turn's spans hang: a trace, and the span that caused the turn in it. */
export interface TraceContext {
  traceId: string;
  parentSpanId?: string;
}

/**
 * The span a record of a call came under (a caller's `traceparent`, a tool call's span): the work
 * it starts joins that trace. The runtime sets it on the record (a start, a follow-up, a report);
 * no wire schema has it, so a request body cannot carry one.
 */
export interface Traced {
  trace?: TraceContext;
}

export type OtlpValue =
  | { stringValue: string }
  | { intValue: string }
  | { doubleValue: number }
  | { boolValue: boolean }
  | { arrayValue: { values: OtlpValue[] } };

export interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpAttribute[];
  status: { code: number; message?: string };
}

export interface OtlpTraces {
  resourceSpans: {
    resource: { attributes: OtlpAttribute[] };
    scopeSpans: { scope: { name: string; version: string }; spans: OtlpSpan[] }[];
  }[];
}

/** A page of a tree's trace: OTLP JSON, and `next` (a cursor) when more spans follow. */
export type TracePage = OtlpTraces & { next?: string };

/**
 * A place in the walk of a tree's spans (src/trace/trace-cursor.ts): in a session's own log
 * (fold again from `from`, send what completed after the event `after`), or at a local child.
 */
export type TraceCursor =
  | { kind: "own"; from: number; after: number }
  | { kind: "child"; index: number; inner: TraceCursor | undefined };

/** A page of the spans of a session's tree, as one session answers its parent. */
export interface TreeSpanPage {
  spans: OtlpSpan[];
  /** The bytes of the spans' JSON, a comma each. */
  bytes: number;
  /** Where the next page starts; undefined: the tree's spans end on this page. */
  next?: TraceCursor;
}
