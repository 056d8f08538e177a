import type { EventType, SessionEvent } from "../../src/contract/events";
import { type SessionFacts, type Span, spansOf, unreadFields } from "../../src/trace/spans";
import { type LogPosition, logSpanPage, type SpanPage } from "../../src/trace/trace-page";
import type { TraceCursor, TracePage, TreeSpanPage } from "../../src/contract/trace";
import { otlpTracesOf } from "../../src/trace/otlp";
import { formatTraceCursor } from "../../src/trace/trace-cursor";
import type { SessionContext } from "../session/session-context";

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
 * The most one page of `GET …/trace` holds (README "Traces"): its spans' OTLP JSON, and room for
 * the resource, the scope and the cursor of the next page.
 */
export const TRACE_PAGE_BYTES = 4 * 1024 * 1024;
export const TRACE_PAGE_SPAN_BYTES = TRACE_PAGE_BYTES - 16 * 1024;

/** What the spans of a session say about it; its fork seed (a parent's events) is never its own. */
function factsOf(ctx: SessionContext, fromSeq: number): SessionFacts | undefined {
  const header = ctx.header();
  if (!header) return undefined;
  return {
    sessionId: header.id,
    label: header.label,
    model: header.options.model,
    depth: header.delegationDepth,
    fromSeq: Math.max(header.seedLength ?? 0, fromSeq),
    content: ctx.traceContent,
  };
}

/**
 * The spans of one session (README "Traces"), from its log from `fromSeq` on (its fork seed
 * never). Every turn's trace is in the log itself (the first message of a turn carries the span
 * that caused it), so a session's spans need nobody else: its exporter sends them alone, and they
 * are the same spans the tree's trace shows.
 */
export function sessionSpans(ctx: SessionContext, fromSeq = 0): Span[] {
  const facts = factsOf(ctx, fromSeq);
  if (!facts) return [];
  return spansOf(ctx.stores.log.scan(SPAN_EVENTS, facts.fromSeq), facts);
}

/**
 * How many pages of the log (each at most 256 KiB of its data past its first event) a trace read
 * folds before it gives the isolate back: each wait for its turn costs it about a millisecond,
 * and what it folds meanwhile holds everyone else for a few.
 */
const PAGES_PER_TURN = 4;

/**
 * The log's span events from `from` up to `before`, a scan page at a time (what the spans never
 * read left in SQLite), the isolate given back every PAGES_PER_TURN pages: workerd runs every
 * object of the Worker in one isolate, one request's JavaScript at a time, so a long log folded
 * in one run would hold every other tenant's requests until it ends. Other requests to this
 * session may append meanwhile; the events read stay the prefix before `before`, which appends
 * never change.
 */
async function* inTurns(
  ctx: SessionContext,
  facts: SessionFacts,
  from: number,
  before: number,
): AsyncGenerator<SessionEvent> {
  let read = 0;
  for (const page of ctx.stores.log.scanPages(SPAN_EVENTS, from, before, unreadFields(facts.content))) {
    yield* page;
    if (++read % PAGES_PER_TURN === 0) await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

/** A page of the session's own spans from `at` (the log read a page at a time, never whole). */
function ownPage(ctx: SessionContext, at: LogPosition, budget: number, first: boolean): Promise<SpanPage> {
  const facts = factsOf(ctx, 0);
  if (!facts) return Promise.resolve({ spans: [], bytes: 0 });
  const from = Math.max(facts.fromSeq ?? 0, at.from);
  const end = ctx.stores.log.nextSeq();
  return logSpanPage(inTurns(ctx, facts, from, end), facts, { from, after: at.after }, end, budget, first);
}

/**
 * A page of the spans of a session and of every local session below it (`GET …/trace`), at most
 * `budget` bytes of OTLP JSON (`first`: the page holds nothing yet, so it takes at least one
 * event's spans). The session's own spans come first, then each child's tree in the order the
 * children were created: a child's first turn hangs under the tool call that started it, because
 * its start carried that call's span. Each session folds its own log as it reads it, so no
 * session holds more than a page of spans, whatever the length of the logs.
 */
export async function treeSpanPage(
  ctx: SessionContext,
  cursor: TraceCursor | undefined,
  budget: number,
  first: boolean,
): Promise<TreeSpanPage> {
  const page: TreeSpanPage = { spans: [], bytes: 0 };
  let index = 0;
  let inner: TraceCursor | undefined;
  if (cursor === undefined || cursor.kind === "own") {
    const own = await ownPage(ctx, cursor ?? { from: 0, after: -1 }, budget, first);
    page.spans = own.spans;
    page.bytes = own.bytes;
    if (own.next) return { ...page, next: { kind: "own", ...own.next } };
  } else {
    index = cursor.index;
    inner = cursor.inner;
  }
  const children = ctx.stores.children.all();
  for (; index < children.length; index++) {
    const empty = first && page.spans.length === 0;
    let below: TreeSpanPage;
    try {
      below = await ctx.session(children[index]!.childId).traceSpanPage(inner, budget - page.bytes, empty);
    } catch {
      below = { spans: [], bytes: 0 }; // unreachable now: its spans are missing from this answer, not an error of it
    }
    page.spans.push(...below.spans);
    page.bytes += below.bytes;
    if (below.next) return { ...page, next: { kind: "child", index, inner: below.next } };
    inner = undefined;
  }
  return page;
}

/** The trace of a session's tree as its callers read it, page by page (README "Traces"). */
export class TraceReads {
  readonly #ctx: SessionContext;
  readonly #serviceName: string;

  /** `serviceName`: the resource's `service.name` in the pages it answers (OTEL_SERVICE_NAME). */
  constructor(ctx: SessionContext, serviceName: string) {
    this.#ctx = ctx;
    this.#serviceName = serviceName;
  }

  /**
   * `GET /v1/sessions/:id/trace`: a page of the spans of the session and its local descendants,
   * OTLP JSON of at most 4 MiB, and where the next page starts when there is one (`next`).
   */
  async otlpPage(cursor: TraceCursor | undefined): Promise<TracePage> {
    const page = await treeSpanPage(this.#ctx, cursor, TRACE_PAGE_SPAN_BYTES, true);
    const traces = otlpTracesOf(page.spans, this.#serviceName);
    return page.next ? { ...traces, next: formatTraceCursor(page.next) } : traces;
  }

  /** A page of the spans of this session's tree, for its parent's read. */
  spanPage(cursor: TraceCursor | undefined, budget: number, first: boolean): Promise<TreeSpanPage> {
    return treeSpanPage(this.#ctx, cursor, budget, first);
  }
}
