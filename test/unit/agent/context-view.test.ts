import { describe, expect, it } from "vitest";
import {
  compactionRequest,
  fitted,
  isContextOverflow,
  overThreshold,
  statedContextLimit,
} from "../../../src/agent/compaction";
import { ContextView } from "../../../src/agent/context-view";
import type { EventData, EventType } from "../../../src/contract/events";
import { textOf } from "../../../src/contract/content";

/** A log as the view reads it: events with contiguous seqs from 0. */
class Log {
  readonly events: { seq: number; type: EventType; data: unknown }[] = [];
  add<T extends EventType>(type: T, data: EventData[T]): number {
    const seq = this.events.length;
    this.events.push({ seq, type, data });
    return seq;
  }
  /** One turn: a user message, then `calls` tool calls answered in one step, then the answer. */
  turn(n: number, text: string, calls = 0): void {
    this.add("turn/start", { turn: n });
    this.add("user/message", {
      messageId: `m${n}`,
      content: [{ type: "text", text }],
      source: { kind: "user" },
    });
    if (calls > 0) {
      const toolCalls = Array.from({ length: calls }, (_, i) => ({
        id: `c${n}_${i}`,
        name: "echo",
        args: { i },
      }));
      this.add("assistant/message", { content: [], toolCalls, stopReason: "tool-use", model: "m" });
      for (const call of toolCalls)
        this.add("tool/result", {
          toolCallId: call.id,
          name: "echo",
          content: [{ type: "text", text: "r" }],
          isError: false,
        });
    }
    this.add("assistant/message", {
      content: [{ type: "text", text: `answer ${n}` }],
      stopReason: "end",
      model: "m",
      usage: { inputTokens: 100 * n, outputTokens: 5 },
    });
    this.add("turn/end", { turn: n, reason: "completed" });
  }
  view(): ContextView {
    const view = new ContextView();
    for (const e of this.events) view.observe(e.seq, e.type, e.data);
    return view;
  }
}

const texts = (view: ContextView, window = 128_000) => view.messages(window).map((m) => textOf(m.content));

describe("the context view", () => {
  it("replaces whole turns only: the current turn and the one before stay, a tool call keeps its result", () => {
    const log = new Log();
    for (let n = 1; n <= 4; n++) log.turn(n, `question ${n}`, n % 2);
    log.add("turn/start", { turn: 5 });
    const view = log.view();

    const plan = view.plan(5)!;
    expect(plan.replaced.map((i) => i.turn)).toEqual([1, 1, 1, 1, 2, 2, 3, 3, 3, 3]);
    // the last replaced event is turn 3's answer: nothing of turn 3 stays behind, its call and result go together
    const lastOfTurn3 = log.events.findLast(
      (e) => e.type === "assistant/message" && JSON.stringify(e.data).includes("answer 3"),
    )!;
    expect(plan.throughSeq).toBe(lastOfTurn3.seq);
    // idle (turn 4 ended, none open): the next turn is the current one, so only turn 4 stays
    const idle = new Log();
    for (let n = 1; n <= 4; n++) idle.turn(n, `question ${n}`, n % 2);
    expect(
      idle
        .view()
        .plan(null)!
        .replaced.map((i) => i.turn),
    ).toEqual([1, 1, 1, 1, 2, 2, 3, 3, 3, 3]);
    // two turns in all: nothing older than the kept ones, nothing to replace
    const short = new Log();
    short.turn(1, "a");
    short.add("turn/start", { turn: 2 });
    expect(short.view().plan(2)).toBeUndefined();
    expect(
      short
        .view()
        .plan(2, { tight: true })!
        .replaced.map((i) => i.turn),
    ).toEqual([1, 1]);
  });

  it("after a compaction holds the summary and what follows its boundary; a view read from the compaction on is the same", () => {
    const log = new Log();
    for (let n = 1; n <= 3; n++) log.turn(n, `question ${n}`);
    const throughSeq = log.view().plan(null)!.throughSeq;
    const compacted = {
      throughSeq,
      summary: "S",
      tokensBefore: 10,
      tokensAfter: 5,
      trigger: "request" as const,
    };
    const at = log.add("context/compacted", compacted);
    log.turn(4, "question 4");

    const live = log.view();
    expect(texts(live)).toEqual([
      "Summary of the earlier conversation (older turns were compacted):\n\nS",
      "question 3",
      "answer 3",
      "question 4",
      "answer 4",
    ]);
    const cold = ContextView.from(
      log.events.filter((e) => e.seq > throughSeq),
      { seq: at, data: compacted },
    );
    expect(cold.messages(128_000)).toEqual(live.messages(128_000));
    expect(live.compaction).toEqual({ seq: at, throughSeq, summary: "S" });
  });

  it("estimates from the newest reported input tokens plus what followed, never below its own count", () => {
    const log = new Log();
    log.turn(1, "x".repeat(400));
    // reported: 100 input tokens for the step; then the answer (and its overhead) follows
    const view = log.view();
    const own = Math.ceil((400 + 16 + "answer 1".length + 16) / 4);
    expect(view.estimate(128_000, 0)).toBe(Math.max(100 + Math.ceil(("answer 1".length + 16) / 4), own));
    // a provider that under-reports is not trusted: the count of the view itself bounds it below
    expect(view.estimate(128_000, 40_000)).toBe(Math.ceil((40_000 + 400 + 16 + 8 + 16) / 4));
    expect(overThreshold(801, 1000)).toBe(true);
    expect(overThreshold(800, 1000)).toBe(false);
  });

  it("cuts a message over a quarter of the window with a marker, and a turn that overflowed to a sixteenth; the log's text stays whole", () => {
    const log = new Log();
    const big = "b".repeat(10_000);
    log.turn(1, big);
    const view = log.view();
    const [shown] = texts(view, 2000);
    expect(shown!.length).toBeLessThanOrEqual(2000);
    expect(shown).toMatch(/\[… \d+ characters cut here; the session's log keeps the whole text\]$/);
    expect(texts(view, 100_000)[0]).toBe(big);

    log.add("turn/start", { turn: 2 });
    log.add("user/message", {
      messageId: "m2",
      content: [{ type: "text", text: big }],
      source: { kind: "user" },
    });
    log.add("turn/end", { turn: 2, reason: "error", code: "CONTEXT_OVERFLOW", error: "too long" });
    const [first, , overflowed] = texts(log.view(), 8000);
    expect(first!.length).toBeGreaterThan(7000);
    expect(first!.length).toBeLessThanOrEqual(8000);
    expect(overflowed!.length).toBeLessThanOrEqual(2000);
    expect(overflowed).toMatch(/characters cut here/);
  });
});

describe("the summarizing call", () => {
  it("is marked as a compaction, has no tools, and carries the earlier summary and the replaced messages as text", () => {
    const log = new Log();
    for (let n = 1; n <= 3; n++) log.turn(n, `question ${n}`, 1);
    const plan = log.view().plan(null)!;
    const request = compactionRequest({
      model: "m",
      previousSummary: "before",
      plan,
      window: 2000,
      params: { temperature: 0.2, maxOutputTokens: 10_000 },
      signal: new AbortController().signal,
    });
    expect(request.purpose).toBe("compaction");
    expect(request.tools).toEqual([]);
    expect(request.params).toEqual({ temperature: 0.2, maxOutputTokens: 250 });
    const text = textOf(request.turn[0]!.content);
    expect(
      text.startsWith('[earlier summary]\nbefore\n\n[user]\nquestion 1\n\n[assistant calls echo] {"i":0}'),
    ).toBe(true);
    expect(text).toContain("[result of echo]\nr");
    expect(text.endsWith("[assistant]\nanswer 2")).toBe(true);
    expect(request.history()).toEqual(request.turn);

    // a large window: the summary's cap stays modest, and an earlier summary is folded in whole
    const earlier = `${"e".repeat(10_000)} end of the earlier summary`;
    const wide = compactionRequest({
      model: "m",
      previousSummary: earlier,
      plan,
      window: 1_000_000,
      params: undefined,
      signal: new AbortController().signal,
    });
    expect(wide.params).toEqual({ maxOutputTokens: 4096 });
    expect(textOf(wide.turn[0]!.content).startsWith(`[earlier summary]\n${earlier}\n\n[user]`)).toBe(true);
  });

  it("fits its text to a budget: the longest entries cut to one length, else the oldest left out whole", () => {
    const joined = (parts: string[]) => parts.join("\n\n").length;
    const entries = ["a".repeat(10), "b".repeat(1000), "c".repeat(2000)];
    const out = fitted(entries, 1010);
    expect(joined(out)).toBeLessThanOrEqual(1010);
    expect(out[0]).toBe(entries[0]);
    const kept = (e: string) => /^([bc]+) \[… \d+ characters cut\]$/.exec(e)![1]!.length;
    expect(kept(out[1]!)).toBe(kept(out[2]!));
    expect(fitted(entries, 10_000)).toEqual(entries);

    // a hundred long entries in a small budget: the newest stay (each at least 200 characters)
    const many = Array.from({ length: 100 }, (_, i) => `${i} ${"x".repeat(1000)}`);
    const fit = fitted(many, 2000);
    expect(joined(fit)).toBeLessThanOrEqual(2000);
    const omitted = Number(/^\[(\d+) earlier messages omitted\]$/.exec(fit[0]!)![1]);
    expect(fit.slice(1).map((e) => e.split(" ")[0])).toEqual(many.slice(omitted).map((e) => e.split(" ")[0]));
    for (const e of fit.slice(1)) expect(e.length).toBeGreaterThanOrEqual(200);
  });
});

describe("a refusal as too long", () => {
  it("is recognised in the providers' words, and only on a 400, 413 or 422 (or no status)", () => {
    const openai =
      "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.";
    expect(isContextOverflow(400, `${openai} context_length_exceeded`)).toBe(true);
    expect(isContextOverflow(400, "prompt is too long: 210000 tokens > 200000 maximum")).toBe(true);
    expect(
      isContextOverflow(
        400,
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
      ),
    ).toBe(true);
    expect(isContextOverflow(undefined, "context_length_exceeded")).toBe(true);
    expect(isContextOverflow(500, "context_length_exceeded")).toBe(false);
    expect(isContextOverflow(400, "temperature must be at most 2")).toBe(false);
    expect(statedContextLimit(openai)).toBe(8192);
    expect(statedContextLimit("prompt is too long: 210000 tokens > 200000 maximum")).toBe(200_000);
    expect(statedContextLimit("The prompt is too long.")).toBeUndefined();
  });
});
