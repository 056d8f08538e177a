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
