import { describe, expect, it } from "vitest";
import { emptyFold, foldTask, latestQueued, messageDone, resultOf } from "../../../src/a2a/task-fold";
import type { SessionEvent } from "../../../src/contract/events";

/** A session's log read as an A2A task (src/a2a/task-fold.ts). */

let seq = 0;
function ev<T extends SessionEvent["type"]>(type: T, data: SessionEvent<T>["data"]): SessionEvent {
  seq += 1;
  return { seq, type, at: 1_000 + seq, data } as SessionEvent;
}
const user = { kind: "user" } as const;
const text = (t: string) => [{ type: "text" as const, text: t }];

function turn(
  messageId: string,
  n: number,
  answer: string,
  reason: "completed" | "aborted" | "error" = "completed",
) {
  return [
    ev("agent/inbox/inserted", { messageId, lane: "next-turn", waking: true, source: user }),
    ev("turn/start", { turn: n }),
    ev("agent/inbox/claimed", { messageId, turn: n }),
    ev("user/message", { messageId, content: text(`q${n}`), source: user }),
    ev("assistant/message", { content: text(answer), stopReason: "end", model: "scripted" }),
    ev("turn/end", { turn: n, reason, ...(reason === "error" ? { error: "the model failed" } : {}) }),
  ];
}

describe("foldTask", () => {
  it("follows the latest user message: submitted, working, then its turn's end", () => {
    const events = turn("m1", 1, "a1");
    const states = events.map((_, i) => foldTask(emptyFold(), events.slice(0, i + 1)).phase);
    expect(states).toEqual(["submitted", "submitted", "working", "working", "working", "completed"]);
    const fold = foldTask(emptyFold(), events);
    expect(resultOf(fold)).toEqual(text("a1"));
    expect(fold.history.map((m) => [m.role, m.id])).toEqual([
      ["user", "m1"],
      ["agent", "turn-1"],
    ]);
  });

  it("is resumable: folding in two parts equals folding at once, and events at or before the cursor are skipped", () => {
    const events = [...turn("m1", 1, "a1"), ...turn("m2", 2, "a2")];
    const whole = foldTask(emptyFold(), events);
    const first = foldTask(emptyFold(), events.slice(0, 5));
    expect(foldTask(first, events)).toEqual(whole);
    expect(whole.results.map((r) => r.turn)).toEqual([1, 2]);
    expect(resultOf(whole)).toEqual(text("a2"));
  });

  it("an interrupted turn is canceled, a failed one failed with its error; other senders do not move the state", () => {
    expect(foldTask(emptyFold(), turn("m1", 1, "", "aborted")).phase).toBe("canceled");
    const failed = foldTask(emptyFold(), turn("m1", 1, "", "error"));
    expect([failed.phase, failed.reason]).toEqual(["failed", "the model failed"]);
    const notice = ev("agent/inbox/inserted", {
      messageId: "n1",
      lane: "next-turn",
      waking: true,
      source: { kind: "subagent-settled", form: "notice", summary: "done", senderSessionId: "x" },
    });
    expect(foldTask(failed, [notice]).phase).toBe("failed");
  });

  it("a follow-up sent while a turn runs is submitted until a turn takes it; each message keeps its own state", () => {
    const [inserted, start, claimed, message, answer] = turn("m1", 1, "a1");
    const mid = foldTask(emptyFold(), [inserted!, start!, claimed!, message!, answer!]);
    const followup = ev("agent/inbox/inserted", {
      messageId: "m2",
      lane: "next-turn",
      waking: true,
      source: user,
    });
    const end1 = ev("turn/end", { turn: 1, reason: "completed" });
    const after = foldTask(mid, [followup, end1]);
    // the task is its latest message's: queued; the first message's own turn is over
    expect(after.phase).toBe("submitted");
    expect(latestQueued(after)).toBe(true);
    expect(resultOf(after)).toBeUndefined();
    expect(messageDone(after, "m1")).toBe(true);
    expect(after.messages.m1).toEqual({ phase: "completed", turn: 1 });
    expect(messageDone(after, "m2")).toBe(false);
    const taken = foldTask(after, [
      ev("turn/start", { turn: 2 }),
      ev("agent/inbox/claimed", { messageId: "m2", turn: 2 }),
    ]);
    expect([taken.phase, latestQueued(taken)]).toEqual(["working", false]);
  });

  it("a message discarded before any turn took it fails, saying why", () => {
    const inserted = ev("agent/inbox/inserted", {
      messageId: "m9",
      lane: "next-turn",
      waking: true,
      source: user,
    });
    const discarded = ev("agent/inbox/discarded", { messageId: "m9", reason: "drained" });
    const fold = foldTask(emptyFold(), [inserted, discarded]);
    expect([fold.phase, fold.reason]).toEqual(["failed", "the message was discarded: drained"]);
  });
});
