import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { EventLog } from "../../../durable-objects/store/event-log";
import { migrate } from "../../../durable-objects/store/schema";
import { CONVERSATION_EVENTS } from "../../../src/contract/events";
import { stub } from "../../support/objects";

/** Every read of the log, from a few cursors: what a log answers from its tail must be what SQLite holds. */
function reads(log: EventLog, end: number): unknown {
  const cursors = [0, 1, Math.floor(end / 2), end - 3, end - 1, end, end + 5].filter((c) => c >= 0);
  return cursors.map((from) => ({
    from,
    page: log.page(from - 1, 50),
    view: log.view().messages(128_000, from),
    results: log.ofTypes(["tool/result", "turn/end"], from),
    lastAnswer: log.last("assistant/message", from),
    lastStart: log.last("turn/start", from),
    unanswered: log.unansweredToolCalls(from),
  }));
}

describe("the event log's tail", () => {
  it("answers every read inside it exactly as SQLite does, across a rolled-back transaction and past its size", async () => {
    await runInDurableObject(stub(crypto.randomUUID()), (_instance: unknown, state: DurableObjectState) => {
      migrate(state.storage);
      const log = new EventLog(state.storage.sql);
      log.startEmpty();
      const turn = (n: number) =>
        state.storage.transactionSync(() => {
          log.append("turn/start", { turn: n });
          log.append("user/message", {
            messageId: `m${n}`,
            content: [{ type: "text", text: `ask ${n} "quoted" \u00e9` }],
            source: { kind: "user" },
          });
          log.append("assistant/message", {
            content: [{ type: "text", text: "calling" }],
            toolCalls: [{ id: `c${n}`, name: "t", args: { n } }],
            stopReason: "tool-use",
            model: "scripted",
          });
          log.append("tool/result", {
            toolCallId: `c${n}`,
            name: "t",
            content: [{ type: "text", text: `r${n}` }],
            isError: false,
          });
          log.append("turn/end", { turn: n, reason: "completed" });
        });
      const fromSqlite = () => new EventLog(state.storage.sql); // a new instance: no tail

      for (let n = 1; n <= 3; n++) turn(n);
      expect(reads(log, log.nextSeq())).toEqual(reads(fromSqlite(), log.nextSeq()));

      // a transaction that rolls back: what it appended is gone from both
      expect(() =>
        state.storage.transactionSync(() => {
          log.append("turn/start", { turn: 99 });
          throw new Error("rolled back");
        }),
      ).toThrow("rolled back");
      log.rollback();
      turn(4);
      expect(reads(log, log.nextSeq())).toEqual(reads(fromSqlite(), log.nextSeq()));

      // past the tail's size: older cursors fall back to SQLite, newer ones stay in memory
      for (let n = 5; n <= 140; n++) turn(n);
      const end = log.nextSeq();
      expect(end).toBe(140 * 5);
      expect(reads(log, end)).toEqual(reads(fromSqlite(), end));
      expect(log.ofTypes(CONVERSATION_EVENTS, 0)).toEqual(fromSqlite().ofTypes(CONVERSATION_EVENTS, 0));
    });
  });
});
