import type { SessionEvent } from "../contract/events";
import type { Span } from "../contract/trace";
import { utf8Length } from "../core/quotas";
import { otlpTraces } from "./otlp";
import { mcpCallSpan, turnSpanId } from "./span-ids";

/**
 * Which of a session's spans its exporter sends next (README "Traces", export), as a pure
 * function of its log and a durable cursor.
 *
 * The unit of export is a finished piece of work: a turn (its `invoke_agent` span and every span
 * under it, from `turn/start` to `turn/end`) or a call an MCP client made on the session's face
 * (`mcp/call` to `mcp/result`). A unit is finished at the seq of its last event; nothing of a unit
 * still running is sent, so a turn's spans leave once, complete, after its end. Units overlap (an
 * MCP call open across a turn's end, a turn that starts while a call is open), so one seq cannot
 * say what was sent; the cursor holds three numbers:
 *
 * - `through`: every unit that finished at a seq at or before it was sent (or dropped);
 * - `from`: every unit that finishes after `through` started at or after it, so the log is read
 *   from there (the start of the oldest unit still open at `through`, else `through + 1`);
 * - `sent`: how many spans of the first unit to finish after `through` were sent already (a unit
 *   larger than a batch goes out in parts, each part a batch of its own).
 *
 * A batch takes the units that finished after `through` in the order they finished, so no unit
 * is ever skipped and none is sent twice once its batch was accepted. The spans are the
 * projection's own (sessionSpans), ids included, so a batch sent again after a restart is the
 * same spans.
 *
 * Bounds (what a collector that stays down costs; the exporter itself keeps only the cursor and
 * its retry state, the spans stay in the log):
 *
 * - a batch holds at most `maxSpans` spans and about `maxBytes` bytes of encoded spans (at least
 *   one span);
 * - a finished unit that ended more than `horizonMs` ago is skipped, and so is a unit still open
 *   that started more than `horizonMs` ago (it no longer holds the cursor back: an MCP call whose
 *   answer died with its instance never ends);
 * - when more than `maxBacklogSpans` spans wait, the oldest whole units are skipped until no more
 *   than that many wait.
 *
 * Skipped spans are counted (the caller keeps the count: `trace:dropped`).
 */

export interface ExportCursor {
  through: number;
  from: number;
  sent: number;
}

/** Where a session's export starts: its whole log (a fork's seed is never its own: sessionSpans). */
export const START_CURSOR: ExportCursor = { through: -1, from: 0, sent: 0 };

export interface ExportLimits {
  /** Spans per request. */
  maxSpans: number;
  /** Bytes of encoded spans per request (a single larger span still goes, alone). */
  maxBytes: number;
  /** How long a finished unit waits for a collector before it is skipped (and an open one holds the cursor). */
  horizonMs: number;
  /** How many spans may wait; past that the oldest units are skipped. */
  maxBacklogSpans: number;
}

export const EXPORT_LIMITS: ExportLimits = {
  maxSpans: 512,
  maxBytes: 1024 * 1024,
  horizonMs: 24 * 3600 * 1000,
  maxBacklogSpans: 10_000,
};

/** The events that open and close units: what the cursor's arithmetic reads. */
export const BOUNDARY_EVENTS = ["turn/start", "turn/end", "mcp/call", "mcp/result"] as const;
export type BoundaryEvent = SessionEvent<(typeof BOUNDARY_EVENTS)[number]>;

/** The events that finish a unit: one after `through` means a batch is owed. */
export const FINISHING_EVENTS = ["turn/end", "mcp/result"] as const;

export interface PlanInput {
  sessionId: string;
  cursor: ExportCursor;
  /** The log's boundary events from `cursor.from` on. */
  boundaries: readonly BoundaryEvent[];
  /** The session's spans from `cursor.from` on (sessionSpans), read with `boundaries`. */
  spans: readonly Span[];
  /** The log's last seq when both were read. */
  upTo: number;
  now: number;
  limits?: ExportLimits;
}

/** A cursor to store, and the spans it drops (added to `trace:dropped`). */
export interface CursorMove {
  cursor: ExportCursor;
  dropped: number;
}

export interface ExportPlan {
  /** What the bounds skip: stored before the batch is sent (a failed send does not bring it back). */
  skip: CursorMove | undefined;
  /** The next batch (empty: nothing to send, store `next` at once). */
  batch: Span[];
  /** Stored once the collector accepted the batch (or refused it for good). */
  next: CursorMove;
}

interface Unit {
  /** The span every other span of the unit hangs under. */
  root: string;
  start: number;
  startAt: number;
  end?: number;
  endAt?: number;
  spans: Span[];
}

export function planBatch(input: PlanInput): ExportPlan {
  const { cursor, now } = input;
  const limits = input.limits ?? EXPORT_LIMITS;
  const cutoff = now - limits.horizonMs;
  const units = unitsOf(input);
  const pending = units
    .filter((u): u is Unit & { end: number; endAt: number } => u.end !== undefined && u.end > cursor.through)
    .sort((a, b) => a.end - b.end);
  // open units past the horizon stop holding the cursor back
  const abandoned = new Set(units.filter((u) => u.end === undefined && u.startAt < cutoff));
  const fromAt = (through: number): number => {
    let from = through + 1;
    for (const u of units) {
      const open = u.start <= through && (u.end === undefined || u.end > through);
      if (open && !abandoned.has(u)) from = Math.min(from, u.start);
    }
    return from;
  };
  /** Spans of abandoned units a cursor at `from` leaves behind that `past` did not. */
  const left = (from: number, past: number): number =>
    [...abandoned].filter((u) => u.start < from && u.start >= past).reduce((n, u) => n + u.spans.length, 0);

  // the bounds: the oldest finished units go first
  let through = cursor.through;
  let sent = cursor.sent;
  let skipped = 0;
  let i = 0;
  const skipOne = (): void => {
    const unit = pending[i]!;
    skipped += Math.max(0, unit.spans.length - sent);
    through = unit.end;
    sent = 0;
    i += 1;
  };
  while (i < pending.length && pending[i]!.endAt < cutoff) skipOne();
  let waiting = pending.slice(i).reduce((n, u) => n + u.spans.length, 0) - sent;
  while (i < pending.length && waiting > limits.maxBacklogSpans) {
    waiting -= pending[i]!.spans.length - sent;
    skipOne();
  }
  const skipFrom = fromAt(through);
  const skip: CursorMove | undefined =
    through === cursor.through && sent === cursor.sent && skipFrom === cursor.from
      ? undefined
      : { cursor: { through, from: skipFrom, sent }, dropped: skipped + left(skipFrom, cursor.from) };

  // the batch: whole units in the order they finished, the last one possibly in part
  const batch: Span[] = [];
  let bytes = 0;
  let whole = true;
  for (let j = i; j < pending.length && whole; j++) {
    const unit = pending[j]!;
    const offset = j === i ? sent : 0;
    let k = offset;
    for (; k < unit.spans.length; k++) {
      const span = unit.spans[k]!;
      const size = spanBytes(span);
      if (batch.length >= limits.maxSpans || (batch.length > 0 && bytes + size > limits.maxBytes)) break;
      batch.push(span);
      bytes += size;
    }
    if (k < unit.spans.length) {
      whole = false;
      sent = k;
    } else {
      through = unit.end;
      sent = 0;
    }
  }
  // every unit that finished was taken: nothing up to the log's end is owed any more
  if (whole) {
    through = Math.max(through, input.upTo);
    sent = 0;
  }
  const from = fromAt(through);
  return { skip, batch, next: { cursor: { through, from, sent }, dropped: left(from, skipFrom) } };
}

/** The units that start at or after `cursor.from`, each with its spans. */
function unitsOf({ sessionId, cursor, boundaries, spans }: PlanInput): Unit[] {
  const units: Unit[] = [];
  let turn: Unit | undefined;
  const calls = new Map<string, Unit>();
  const open = (root: string, event: BoundaryEvent): Unit => {
    const unit: Unit = { root, start: event.seq, startAt: event.at, spans: [] };
    units.push(unit);
    return unit;
  };
  const close = (unit: Unit, event: BoundaryEvent): void => {
    unit.end = event.seq;
    unit.endAt = event.at;
  };
  for (const event of boundaries) {
    if (event.seq < cursor.from) continue;
    switch (event.type) {
      case "turn/start": {
        // a turn that never ended (the projection leaves it as it was) ends where the next begins
        if (turn) close(turn, event);
        const data = event.data as SessionEvent<"turn/start">["data"];
        turn = open(turnSpanId(sessionId, data.turn), event);
        break;
      }
      case "turn/end":
        if (turn) close(turn, event);
        turn = undefined;
        break;
      case "mcp/call": {
        const { callId } = event.data as SessionEvent<"mcp/call">["data"];
        calls.set(callId, open(mcpCallSpan(sessionId, callId, undefined).spanId, event));
        break;
      }
      case "mcp/result": {
        const { callId } = event.data as SessionEvent<"mcp/result">["data"];
        const call = calls.get(callId);
        if (call) close(call, event);
        calls.delete(callId);
        break;
      }
    }
  }
  // each span joins the unit of its root, or of its parent (a parent comes before its children)
  const roots = new Map(units.map((u) => [u.root, u]));
  const owners = new Map<string, Unit>();
  for (const span of spans) {
    const unit =
      roots.get(span.spanId) ?? (span.parentSpanId === undefined ? undefined : owners.get(span.parentSpanId));
    if (!unit) continue;
    owners.set(span.spanId, unit);
    unit.spans.push(span);
  }
  return units;
}

/** A span's size in a request body (its OTLP JSON, UTF-8). */
function spanBytes(span: Span): number {
  const encoded = otlpTraces([span], "").resourceSpans[0]!.scopeSpans[0]!.spans[0];
  return utf8Length(JSON.stringify(encoded));
}

/** Whether a unit finished after the cursor: `lastFinished` is the seq of the log's newest finishing event. */
export function batchOwed(cursor: ExportCursor, lastFinished: number | undefined): boolean {
  return lastFinished !== undefined && lastFinished > cursor.through;
}

/** A stored cursor (the flag's JSON); anything unreadable starts over from the start. */
export function parseCursor(value: string | undefined): ExportCursor {
  if (value === undefined) return START_CURSOR;
  try {
    const { through, from, sent } = JSON.parse(value) as Partial<ExportCursor>;
    if ([through, from, sent].every((n) => Number.isSafeInteger(n)))
      return { through: through!, from: from!, sent: sent! };
  } catch {
    // unreadable: the start cursor below
  }
  return START_CURSOR;
}
