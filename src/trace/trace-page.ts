import type { OtlpSpan } from "../contract/trace";
import type { SessionEvent } from "../contract/events";
import { utf8Length } from "../core/quotas";
import { otlpSpan } from "./otlp";
import { type SessionFacts, type Span, SpanFold } from "./spans";

/**
 * One page of a session's own spans, folded from its log as it is read (spans.ts, `SpanFold`):
 * the spans completed after `after`, in the order they complete, as long as their OTLP JSON fits
 * `budget` bytes. The spans completed by one event go in together or not at all; a page that
 * holds nothing yet (`first`) takes them whatever their size, so every page moves on. A page
 * that stops early says where the next one starts: at the last point before the stop where no
 * span was open, to be folded again from there, sending only what completed past the stop.
 * The events may come asynchronously (a reader that gives others their turn between reads of the
 * log); they must be the log's prefix before `endSeq`, as it stood when the page began.
 */

export interface LogPosition {
  /** Where to fold from: no span of the log is open before this event. */
  from: number;
  /** The spans completed by this event or earlier were on earlier pages. */
  after: number;
}

export interface SpanPage {
  spans: OtlpSpan[];
  /** The bytes of the spans' JSON, a comma each. */
  bytes: number;
  /** Where the next page starts; undefined: the log's spans end on this page. */
  next?: LogPosition;
}

export async function logSpanPage(
  /** The log's events from `at.from`, before `endSeq` (read as the fold asks for them). */
  events: AsyncIterable<SessionEvent> | Iterable<SessionEvent>,
  facts: SessionFacts,
  at: LogPosition,
  /** The seq after the log's last event: spans still open complete there, as in progress. */
  endSeq: number,
  budget: number,
  first: boolean,
): Promise<SpanPage> {
  const page: SpanPage = { spans: [], bytes: 0 };
  let completed: Span[] = [];
  const fold = new SpanFold(facts, (span) => completed.push(span));
  /** Takes what the event `seq` completed, unless it does not fit. */
  const take = (seq: number): boolean => {
    const spans = completed;
    completed = [];
    if (spans.length === 0 || seq <= at.after) return true;
    const encoded = spans.map(otlpSpan);
    const bytes = encoded.reduce((n, span) => n + utf8Length(JSON.stringify(span)) + 1, 0);
    if (page.bytes + bytes > budget && !(first && page.spans.length === 0)) return false;
    page.spans.push(...encoded);
    page.bytes += bytes;
    return true;
  };
  let quietAt = at.from;
  for await (const event of events) {
    if (fold.quiet()) quietAt = event.seq;
    fold.add(event);
    if (!take(event.seq)) return { ...page, next: { from: quietAt, after: event.seq - 1 } };
  }
  fold.end();
  if (!take(endSeq)) return { ...page, next: { from: quietAt, after: endSeq - 1 } };
  return page;
}
