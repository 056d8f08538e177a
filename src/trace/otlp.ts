import type { AttributeValue, OtlpAttribute, OtlpSpan, OtlpTraces, OtlpValue, Span } from "../contract/trace";

export type { OtlpTraces } from "../contract/trace";

/**
 * Spans in the OTLP/HTTP JSON encoding (`ExportTraceServiceRequest`, as `POST /v1/traces` takes it
 * and as Jaeger and other OTLP tools import it): ids as lowercase hex, times as decimal strings of
 * nanoseconds, 64-bit integers as decimal strings. The encoding of the OpenTelemetry SDKs'
 * exporters needs their in-memory span objects (an SDK's tracer); spans here come from the log,
 * so they are written straight in the format, which the tests decode with the official OTLP
 * protobuf definitions' JSON mapping.
 */

/** OTLP span kinds. */
const KIND = { internal: 1, client: 3 } as const;
/** OTLP status codes. */
const STATUS_ERROR = 2;

/** `service.name` when OTEL_SERVICE_NAME is not set. */
export const DEFAULT_SERVICE_NAME = "subagents-edge";

/** The scope every span is reported under (the instrumentation: this runtime). */
export const SCOPE = { name: "subagents-edge", version: "0.1.0" };

export function otlpTraces(spans: readonly Span[], serviceName: string): OtlpTraces {
  return otlpTracesOf(spans.map(otlpSpan), serviceName);
}

/** Spans already encoded (`otlpSpan`) under the resource and the scope. */
export function otlpTracesOf(spans: OtlpSpan[], serviceName: string): OtlpTraces {
  return {
    resourceSpans: [
      {
        resource: { attributes: [attribute("service.name", serviceName)] },
        scopeSpans: [{ scope: SCOPE, spans }],
      },
    ],
  };
}

export function otlpSpan(span: Span): OtlpSpan {
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
    name: span.name,
    kind: KIND[span.kind],
    startTimeUnixNano: nanos(span.start),
    endTimeUnixNano: nanos(Math.max(span.start, span.end)),
    attributes: Object.entries(span.attributes).map(([key, value]) => attribute(key, value)),
    status: span.error === undefined ? { code: 0 } : { code: STATUS_ERROR, message: span.error },
  };
}

function attribute(key: string, value: AttributeValue): OtlpAttribute {
  return { key, value: otlpValue(value) };
}

function otlpValue(value: AttributeValue): OtlpValue {
  if (Array.isArray(value)) return { arrayValue: { values: value.map((v) => ({ stringValue: v })) } };
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
}

/** Epoch ms as a decimal string of nanoseconds (exact: no float past 2^53). */
function nanos(ms: number): string {
  return `${Math.trunc(ms)}000000`;
}
