/**
 * The spans `GET /v1/sessions/:id/trace` answers (README "Traces"), in the OTLP/HTTP JSON encoding
 * (`ExportTraceServiceRequest`, importable as is into Jaeger and other OTLP tools): ids as
 * lowercase hex, times as decimal strings of nanoseconds since the epoch, 64-bit integers as
 * decimal strings. Written out here so the SDK stands alone; `spansOfTrace` and `attributeOf`
 * read it without knowing the encoding's nesting.
 */

/** An attribute's value: exactly one member is set. */
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

/** OTLP span kinds: 1 internal (agents, tools), 3 client (a model call). */
export type OtlpSpanKind = number;

/** OTLP status codes: 0 unset, 1 ok, 2 error (`message` then says what failed). */
export interface OtlpStatus {
  code: number;
  message?: string;
}

export interface OtlpSpan {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  /** Absent on a trace's root span. */
  parentSpanId?: string;
  /** `invoke_agent <label or session id>`, `chat <model route>` or `execute_tool <tool>`. */
  name: string;
  kind: OtlpSpanKind;
  /** Nanoseconds since the epoch, as a decimal string. */
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpAttribute[];
  status: OtlpStatus;
}

export interface OtlpScopeSpans {
  scope: { name: string; version: string };
  spans: OtlpSpan[];
}

export interface OtlpResourceSpans {
  /** `service.name` among them (`OTEL_SERVICE_NAME`). */
  resource: { attributes: OtlpAttribute[] };
  scopeSpans: OtlpScopeSpans[];
}

/** The body of `GET /v1/sessions/:id/trace`. */
export interface OtlpTrace {
  resourceSpans: OtlpResourceSpans[];
  /** More spans follow (a trace past 4 MiB comes in pages): pass it as `cursor` for the next page. */
  next?: string;
}

/** Every span of a trace body, in the order the body lists them. */
export function spansOfTrace(trace: OtlpTrace): OtlpSpan[] {
  return trace.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
}

/** A plain value of an attribute; 64-bit integers (`intValue`) become numbers. */
export type SpanAttributeValue = string | number | boolean | SpanAttributeValue[];

/** The value of attribute `key` of a span (undefined when the span has none). */
export function attributeOf(span: Pick<OtlpSpan, "attributes">, key: string): SpanAttributeValue | undefined {
  const found = span.attributes.find((a) => a.key === key);
  return found === undefined ? undefined : plain(found.value);
}

function plain(value: OtlpValue): SpanAttributeValue {
  if ("stringValue" in value) return value.stringValue;
  if ("intValue" in value) return Number(value.intValue);
  if ("doubleValue" in value) return value.doubleValue;
  if ("boolValue" in value) return value.boolValue;
  return value.arrayValue.values.map(plain);
}
