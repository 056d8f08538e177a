import type { TraceContext } from "../contract/trace";

/**
 * The W3C Trace Context `traceparent` header (https://www.w3.org/TR/trace-context/): how a trace
 * crosses a process boundary. Accepted on the requests that create work (a caller's trace
 * continues into the tree), sent on every outbound request a tool call makes (the far side's
 * work joins the tree's trace under that call's span).
 */

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZEROS = /^0+$/;

/**
 * The context a `traceparent` names, or undefined for a missing or invalid one (the spec's rule:
 * an invalid header is ignored and the work starts a trace of its own, never refused).
 */
export function parseTraceparent(header: string | null | undefined): TraceContext | undefined {
  if (typeof header !== "string") return undefined;
  const match = TRACEPARENT.exec(header.trim());
  if (!match) return undefined;
  const [, version, traceId, parentSpanId, , rest] = match;
  // version ff is invalid; version 00 has exactly four fields (later versions may add more)
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (ZEROS.test(traceId!) || ZEROS.test(parentSpanId!)) return undefined;
  return { traceId: traceId!, parentSpanId: parentSpanId! };
}

/** The `traceparent` of a request made under `context`'s span (sampled: the runtime records every span). */
export function traceparentOf(context: TraceContext): string | undefined {
  return context.parentSpanId ? `00-${context.traceId}-${context.parentSpanId}-01` : undefined;
}
