import { describe, expect, it } from "vitest";
import { emptyFold, foldTask, resultOf } from "../../../src/a2a/task-fold";
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

  it("a follow-up while a turn runs is working until its own turn ends", () => {
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
    expect(after.phase).toBe("working");
    expect(resultOf(after)).toBeUndefined();
  });
});
