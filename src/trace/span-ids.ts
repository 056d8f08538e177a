import type { TraceContext } from "../contract/trace";
import { fingerprint } from "../core/hash";

/**
 * The ids of a session's traces and spans, as pure functions of the session id, the turn, the
 * step and the call id (README "Traces"): the span fold (spans.ts) names its spans with them, and
 * what a turn or a call causes elsewhere (a child's turn, an export) names its parent with them,
 * so a trace rebuilt after a restart, or exported twice, is the same trace.
 */

/** The span id of turn `turn` of a session. */
export function turnSpanId(sessionId: string, turn: number): string {
  return fingerprint(`${sessionId}/turn/${turn}`);
}

/** The span id of the tool call `toolCallId` of turn `turn` of a session. */
export function toolSpanId(sessionId: string, turn: number, toolCallId: string): string {
  return fingerprint(`${sessionId}/turn/${turn}/tool/${toolCallId}`);
}

/** The trace a turn starts when nothing caused it from elsewhere. */
export function newTraceId(sessionId: string, turn: number): string {
  return fingerprint(`${sessionId}/trace/${turn}`) + fingerprint(`trace/${turn}/${sessionId}`);
}

/**
 * The span of tool call `toolCallId` of turn `turn`, as the parent of what the call causes:
 * `turnTrace` is the trace the turn continues (none: the turn's own).
 */
export function callTrace(
  sessionId: string,
  turn: number,
  toolCallId: string,
  turnTrace: TraceContext | undefined,
): TraceContext {
  return {
    traceId: turnTrace?.traceId ?? newTraceId(sessionId, turn),
    parentSpanId: toolSpanId(sessionId, turn, toolCallId),
  };
}

/** The span of the call `callId` an MCP client made on a session's face (`client`: the trace it sent). */
export function mcpCallSpan(
  sessionId: string,
  callId: string,
  client: TraceContext | undefined,
): { traceId: string; spanId: string; parentSpanId?: string } {
  return {
    traceId:
      client?.traceId ?? fingerprint(`${sessionId}/mcp/${callId}/trace`) + fingerprint(`trace/${callId}`),
    spanId: fingerprint(`${sessionId}/mcp/${callId}`),
    ...(client?.parentSpanId ? { parentSpanId: client.parentSpanId } : {}),
  };
}
