import type { EventType } from "../../src/contract/events";
import { type Span, spansOf } from "../../src/trace/spans";
import type { SessionContext } from "./session-context";

/** The events the spans are made of (spans.ts); every other event is skipped unread. */
export const SPAN_EVENTS: readonly EventType[] = [
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
 * The spans of one session (README "Traces"), from its log from `fromSeq` on (its fork seed
 * never). Every turn's trace is in the log itself (the first message of a turn carries the span
 * that caused it), so a session's spans need nobody else: its exporter sends them alone, and they
 * are the same spans the tree's trace shows.
 */
export function sessionSpans(ctx: SessionContext, fromSeq = 0): Span[] {
  const header = ctx.header();
  if (!header) return [];
  const seed = header.seedLength ?? 0;
  const from = Math.max(seed, fromSeq);
  return spansOf(ctx.stores.log.ofTypes(SPAN_EVENTS as EventType[], from), {
    sessionId: header.id,
    label: header.label,
    model: header.options.model,
    depth: header.delegationDepth,
    fromSeq: from,
    content: ctx.traceContent,
  });
}

/**
 * The spans of a session and of every local session below it (`GET …/trace`): a child's first
 * turn hangs under the tool call that started it, because its start carried that call's span.
 */
export async function treeSpans(ctx: SessionContext): Promise<Span[]> {
  const own = sessionSpans(ctx);
  const below = await Promise.all(
    ctx.stores.children.all().map(async (child) => {
      try {
        return await ctx.session(child.childId).traceSpans();
      } catch {
        return []; // unreachable now: its spans are missing from this answer, not an error of it
      }
    }),
  );
  return [...own, ...below.flat()];
}
