import { turnCallOf } from "../../src/agent/call-keys";
import type { EventType } from "../../src/contract/events";
import { type Span, spansOf, type TraceContext, toolSpanId } from "../../src/trace/spans";
import type { SessionContext } from "./session-context";

/** The events the spans are made of (spans.ts); every other event is skipped unread. */
const SPAN_EVENTS: readonly EventType[] = [
  "turn/start",
  "turn/end",
  "agent/inbox/claimed",
  "user/message",
  "assistant/message",
  "tool/result",
  "context/compacted",
  "mcp/call",
  "mcp/result",
];

/**
 * The spans of a session and of every local session below it (README "Traces"), from their logs.
 * `context`: what caused this session's first turn (the tool call of its parent that started it),
 * so a child's first turn joins its parent's trace under that call's span; any other turn starts
 * a trace of its own. Each child is asked the same with the context of the call that started it.
 */
export async function treeSpans(ctx: SessionContext, context: TraceContext | undefined): Promise<Span[]> {
  const header = ctx.header();
  if (!header) return [];
  const { stores } = ctx;
  const fromSeq = header.seedLength ?? 0;
  const events = stores.log.ofTypes(SPAN_EVENTS as EventType[], fromSeq);
  const firstTurn = events.find((e) => e.type === "turn/start");
  const own = spansOf(events, {
    sessionId: header.id,
    label: header.label,
    model: header.options.model,
    depth: header.delegationDepth,
    fromSeq,
    contextOf: (turn) =>
      firstTurn && (firstTurn.data as { turn: number }).turn === turn ? context : undefined,
  });
  const below = await Promise.all(
    stores.children.all().map(async (child) => {
      try {
        return await ctx.session(child.childId).traceSpans(childContext(ctx, own, header.id, child.childId));
      } catch {
        return []; // unreachable now: its spans are missing from this answer, not an error of it
      }
    }),
  );
  return [...own, ...below.flat()];
}

/** The span of the tool call that started `childId` (its run's, or its continuable start's), if any. */
function childContext(
  ctx: SessionContext,
  own: readonly Span[],
  sessionId: string,
  childId: string,
): TraceContext | undefined {
  const key = ctx.stores.runs.byChildId(childId)?.callKey ?? ctx.stores.continuableStarts.callOf(childId);
  const call = key === undefined || key === null ? undefined : turnCallOf(key);
  if (!call) return undefined;
  const spanId = toolSpanId(sessionId, call.turn, call.toolCallId);
  const tool = own.find((s) => s.spanId === spanId);
  return tool ? { traceId: tool.traceId, parentSpanId: tool.spanId } : undefined;
}
