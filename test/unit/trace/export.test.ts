import { describe, expect, it } from "vitest";
import type { EventData, EventType, SessionEvent } from "../../../src/contract/events";
import {
  BOUNDARY_EVENTS,
  batchOwed,
  EXPORT_LIMITS,
  type ExportCursor,
  type ExportLimits,
  type ExportPlan,
  parseCursor,
  planBatch,
  START_CURSOR,
} from "../../../src/trace/export";
import { mcpCallSpan, type Span, spansOf, turnSpanId } from "../../../src/trace/spans";

const SESSION = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f";
const FACTS = { sessionId: SESSION, model: "openai:gpt-4o-mini", depth: 0 };
const HOUR = 3600_000;

/** A session's log, written as the runtime writes it: a seq per event, times moving on. */
class Log {
  readonly events: SessionEvent[] = [];
  at = 1_000_000;

  add<T extends EventType>(type: T, data: EventData[T], later = 10): number {
    this.at += later;
    const seq = this.events.length;
    this.events.push({ seq, type, at: this.at, data } as SessionEvent);
    return seq;
  }

  turnStart(turn: number): number {
    const seq = this.add("turn/start", { turn });
    this.add("user/message", { messageId: `m${turn}`, content: [], source: { kind: "user" } });
    return seq;
  }

  /** A model step calling `tools` tools (answered at once), or answering when 0. */
  step(turn: number, tools = 0): void {
    const calls = Array.from({ length: tools }, (_, i) => ({
      id: `t${turn}-${this.at}-${i}`,
      name: "echo",
      args: {},
    }));
    this.add("assistant/message", {
      content: [],
      ...(tools > 0 ? { toolCalls: calls } : {}),
      stopReason: tools > 0 ? "tool-use" : "end",
      model: "openai:gpt-4o-mini",
    });
    for (const call of calls)
      this.add("tool/result", { toolCallId: call.id, name: "echo", content: [], isError: false });
  }

  turnEnd(turn: number): number {
    return this.add("turn/end", { turn, reason: "completed" });
  }

  /** A whole turn: one step with `tools` tool calls, then an answer. */
  turn(turn: number, tools = 1): void {
    this.turnStart(turn);
    if (tools > 0) this.step(turn, tools);
    this.step(turn);
    this.turnEnd(turn);
  }

  mcpCall(callId: string): number {
    return this.add("mcp/call", { callId, name: "echo", args: {} });
  }

  mcpResult(callId: string): number {
    return this.add("mcp/result", { callId, name: "echo", content: [], isError: false });
  }

  /** The log as it stood with its first `length` events. */
  prefix(length: number): SessionEvent[] {
    return this.events.slice(0, length);
  }
}

/** The plan as the session object makes it: boundaries and spans read from `cursor.from` on. */
function plan(
  events: readonly SessionEvent[],
  cursor: ExportCursor,
  now = events.at(-1)?.at ?? 0,
  limits?: ExportLimits,
): ExportPlan {
  const tail = events.filter((e) => e.seq >= cursor.from);
  return planBatch({
    sessionId: SESSION,
    cursor,
    boundaries: tail.filter((e) => (BOUNDARY_EVENTS as readonly string[]).includes(e.type)) as never,
    spans: spansOf(tail, { ...FACTS, fromSeq: cursor.from }),
    upTo: events.at(-1)?.seq ?? -1,
    now,
    ...(limits ? { limits } : {}),
  });
}

interface Exporter {
  cursor: ExportCursor;
  batches: Span[][];
  dropped: number;
}

/** Every batch owed by the log as it stands, each accepted: what an exporter with a live collector sends. */
function drain(
  events: readonly SessionEvent[],
  exporter: Exporter,
  now?: number,
  limits?: ExportLimits,
): void {
  for (let rounds = 0; rounds < 1000; rounds++) {
    const next = plan(events, exporter.cursor, now, limits);
    if (next.skip) {
      exporter.cursor = next.skip.cursor;
      exporter.dropped += next.skip.dropped;
    }
    exporter.cursor = next.next.cursor;
    exporter.dropped += next.next.dropped;
    if (next.batch.length === 0) return;
    exporter.batches.push(next.batch);
  }
  throw new Error("the exporter never caught up");
}

const fresh = (): Exporter => ({ cursor: START_CURSOR, batches: [], dropped: 0 });
const ids = (spans: readonly Span[]) => spans.map((s) => s.spanId);
const sent = (exporter: Exporter) => exporter.batches.flat();

/** The spans of the whole log that are finished: every span but those of a turn still running and those under it. */
function finishedSpans(events: readonly SessionEvent[]): Span[] {
  const running = new Set<string>();
  return spansOf(events, FACTS).filter((s) => {
    if (s.attributes["subagents.in_progress"] === true || running.has(s.parentSpanId ?? "")) {
      running.add(s.spanId);
      return false;
    }
    return true;
  });
}

describe("which spans the exporter sends next (src/trace/export.ts)", () => {
  it("a finished turn is one batch with all its spans, then nothing is owed", () => {
    const log = new Log();
    log.turn(1, 2);
    const exporter = fresh();
    drain(log.events, exporter);
    expect(exporter.batches).toHaveLength(1);
    expect(exporter.batches[0]).toEqual(spansOf(log.events, FACTS));
    expect(exporter.cursor).toEqual({ through: log.events.length - 1, from: log.events.length, sent: 0 });
    expect(batchOwed(exporter.cursor, log.events.length - 1)).toBe(false);
    expect(plan(log.events, exporter.cursor).batch).toEqual([]);
  });

  it("a turn still running sends nothing until it ends, then it goes whole", () => {
    const log = new Log();
    log.turn(1);
    const exporter = fresh();
    drain(log.events, exporter);
    const start = log.turnStart(2);
    log.step(2, 3);
    drain(log.events, exporter);
    expect(exporter.batches).toHaveLength(1);
    // the running turn holds the cursor's start at its own
    expect(exporter.cursor.from).toBe(start);
    log.step(2);
    const end = log.turnEnd(2);
    expect(batchOwed(exporter.cursor, end)).toBe(true);
    drain(log.events, exporter);
    expect(exporter.batches).toHaveLength(2);
    expect(exporter.batches[1]![0]!.spanId).toBe(turnSpanId(SESSION, 2));
    expect(exporter.batches[1]).toHaveLength(1 + 2 + 3);
    expect(ids(sent(exporter))).toEqual(ids(spansOf(log.events, FACTS)));
  });

  it("an MCP call open across a turn's end goes when it is answered, and the turn that follows after its own end", () => {
    const log = new Log();
    log.turnStart(1);
    log.mcpCall("mcp_a"); // a client calls while turn 1 runs
    log.step(1, 1);
    log.step(1);
    log.turnEnd(1);
    const exporter = fresh();
    drain(log.events, exporter);
    expect(ids(sent(exporter))).not.toContain(mcpCallSpan(SESSION, "mcp_a", undefined).spanId);
    log.turnStart(2);
    log.mcpResult("mcp_a"); // answered while turn 2 runs
    drain(log.events, exporter);
    expect(exporter.batches.at(-1)!.map((s) => s.name)).toEqual(["execute_tool echo"]);
    log.step(2);
    log.turnEnd(2);
    drain(log.events, exporter);
    const all = sent(exporter);
    expect(new Set(ids(all)).size).toBe(all.length);
    expect(all).toEqual(expect.arrayContaining(spansOf(log.events, FACTS)));
    expect(all).toHaveLength(spansOf(log.events, FACTS).length);
  });

  it("a turn open while calls start and end around it loses none of its spans", () => {
    const log = new Log();
    log.mcpCall("mcp_x"); // open before the turn starts, answered inside it
    log.turnStart(1);
    log.mcpCall("mcp_y"); // starts and ends inside the turn
    log.step(1, 2);
    log.mcpResult("mcp_y");
    log.mcpResult("mcp_x");
    log.mcpCall("mcp_z"); // still open when the turn ends
    log.step(1);
    log.turnEnd(1);
    log.mcpResult("mcp_z");
    // whatever the moments the exporter looked, every finished span goes exactly once
    for (let look = 1; look <= log.events.length; look++) {
      const exporter = fresh();
      for (let length = look; length <= log.events.length; length += look)
        drain(log.prefix(length), exporter);
      drain(log.events, exporter);
      expect(ids(sent(exporter)).sort()).toEqual(ids(finishedSpans(log.events)).sort());
    }
  });

  it("whatever the moments it looks, every finished span goes once, none of a running turn", () => {
    const log = new Log();
    log.turn(1, 2);
    log.mcpCall("c1");
    log.turn(2, 0);
    log.turnStart(3);
    log.mcpResult("c1");
    log.mcpCall("c2");
    log.step(3, 4);
    log.mcpResult("c2");
    log.step(3);
    log.turnEnd(3);
    log.turnStart(4);
    log.step(4, 1);
    for (let seed = 1; seed <= 40; seed++) {
      const exporter = fresh();
      let length = 0;
      let state = seed;
      while (length < log.events.length) {
        state = (state * 1103515245 + 12345) % 2 ** 31;
        length = Math.min(log.events.length, length + 1 + (state % 4));
        drain(log.prefix(length), exporter);
        // a batch never holds a span of a turn still running
        for (const span of sent(exporter)) expect(span.attributes["subagents.in_progress"]).toBeUndefined();
      }
      const all = sent(exporter);
      expect(new Set(ids(all)).size).toBe(all.length);
      expect(ids(all).sort()).toEqual(ids(finishedSpans(log.events)).sort());
      expect(ids(all)).not.toContain(turnSpanId(SESSION, 4));
    }
  });

  it("a batch that was not accepted goes again: the same spans (same ids, same content), then what finished since", () => {
    const log = new Log();
    log.turn(1, 3);
    const first = plan(log.events, START_CURSOR);
    // the collector never answered: the cursor stayed, and the log grew meanwhile
    log.turnStart(2);
    log.step(2, 1);
    const again = plan(log.events, START_CURSOR);
    expect(again.batch).toEqual(first.batch);
    expect(JSON.stringify(again.batch)).toBe(JSON.stringify(first.batch));
    log.step(2);
    log.turnEnd(2);
    const later = plan(log.events, START_CURSOR);
    expect(JSON.stringify(later.batch.slice(0, first.batch.length))).toBe(JSON.stringify(first.batch));
    expect(later.batch.slice(first.batch.length)[0]!.spanId).toBe(turnSpanId(SESSION, 2));
  });

  it("a unit larger than a batch goes out in parts, in order, each part a batch", () => {
    const log = new Log();
    log.turn(1, 600); // 1 turn + 2 steps + 600 tools
    log.turn(2, 1);
    const exporter = fresh();
    drain(log.events, exporter);
    expect(exporter.batches.map((b) => b.length)).toEqual([512, 91 + 4]);
    expect(ids(sent(exporter))).toEqual(ids(spansOf(log.events, FACTS)));
    // the cursor in between said how much of the first turn went
    const firstPart = plan(log.events, START_CURSOR);
    expect(firstPart.next.cursor).toEqual({ through: -1, from: 0, sent: 512 });
  });

  it("a batch holds about maxBytes of spans, at least one", () => {
    const log = new Log();
    log.turn(1, 20);
    const small: ExportLimits = { ...EXPORT_LIMITS, maxBytes: 2_000 };
    const exporter = fresh();
    drain(log.events, exporter, undefined, small);
    expect(exporter.batches.length).toBeGreaterThan(3);
    for (const batch of exporter.batches) expect(batch.length).toBeGreaterThanOrEqual(1);
    expect(ids(sent(exporter))).toEqual(ids(spansOf(log.events, FACTS)));
    const tiny: ExportLimits = { ...EXPORT_LIMITS, maxBytes: 1 };
    const one = fresh();
    drain(log.events, one, undefined, tiny);
    expect(one.batches.every((b) => b.length === 1)).toBe(true);
  });

  it("units that finished longer ago than the horizon are skipped and counted, before the batch is sent", () => {
    const log = new Log();
    log.turn(1, 1); // 4 spans
    log.turn(2, 2); // 5 spans
    const end2 = log.events.length - 1;
    log.at += 25 * HOUR;
    log.turn(3, 0); // 2 spans
    const exporter = fresh();
    const first = plan(log.events, exporter.cursor);
    expect(first.skip).toEqual({
      cursor: {
        through: end2,
        from: expect.any(Number),
        sent: 0,
      },
      dropped: 9,
    });
    expect(first.batch.map((s) => s.name)[0]).toBe(`invoke_agent ${SESSION}`);
    expect(first.batch).toHaveLength(2);
    drain(log.events, exporter);
    expect(exporter.dropped).toBe(9);
    expect(sent(exporter)).toHaveLength(2);
  });

  it("more spans waiting than maxBacklogSpans: the oldest whole units are skipped and counted", () => {
    const log = new Log();
    for (let turn = 1; turn <= 10; turn++) log.turn(turn, 8); // 11 spans each
    const limits: ExportLimits = { ...EXPORT_LIMITS, maxBacklogSpans: 50 };
    const exporter = fresh();
    drain(log.events, exporter, undefined, limits);
    expect(exporter.dropped).toBe(66); // 6 turns: 44 remain
    expect(sent(exporter)).toHaveLength(44);
    expect(sent(exporter)[0]!.spanId).toBe(turnSpanId(SESSION, 7));
  });

  it("a unit still open past the horizon stops holding the cursor back, and its spans so far are counted", () => {
    const log = new Log();
    log.mcpCall("lost"); // its instance died: never answered
    log.turn(1, 0);
    const exporter = fresh();
    drain(log.events, exporter);
    expect(exporter.cursor.from).toBe(0);
    log.at += 25 * HOUR;
    log.turn(2, 0);
    drain(log.events, exporter);
    expect(exporter.dropped).toBe(1);
    expect(exporter.cursor).toEqual({ through: log.events.length - 1, from: log.events.length, sent: 0 });
    expect(sent(exporter).map((s) => s.spanId)).toEqual([
      turnSpanId(SESSION, 1),
      expect.any(String),
      turnSpanId(SESSION, 2),
      expect.any(String),
    ]);
    // counted once: later batches do not see it again
    log.turn(3, 0);
    drain(log.events, exporter);
    expect(exporter.dropped).toBe(1);
  });

  it("a turn that never ended ends where the next one starts (it holds nothing back)", () => {
    const log = new Log();
    log.turnStart(1);
    log.step(1, 1); // the turn's end never made it to the log
    log.turn(2, 0);
    const exporter = fresh();
    drain(log.events, exporter);
    expect(ids(sent(exporter)).sort()).toEqual(ids(spansOf(log.events, FACTS)).sort());
    expect(exporter.cursor.from).toBe(log.events.length);
  });

  it("a stored cursor is read back, anything unreadable is the start", () => {
    expect(parseCursor(JSON.stringify({ through: 4, from: 2, sent: 0 }))).toEqual({
      through: 4,
      from: 2,
      sent: 0,
    });
    expect(parseCursor(undefined)).toEqual(START_CURSOR);
    expect(parseCursor("{")).toEqual(START_CURSOR);
    expect(parseCursor(JSON.stringify({ through: "4" }))).toEqual(START_CURSOR);
  });
});
