import { Role } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { emptyFold, foldTask } from "../../../src/a2a/task-fold";
import { contentOf, taskOf, textPart } from "../../../src/a2a/wire";
import type { SessionEvent } from "../../../src/contract/events";

/** A folded session as an A2A task, and A2A parts as content (src/a2a/wire.ts). */

const user = { kind: "user" } as const;
const events: SessionEvent[] = [
  {
    seq: 0,
    type: "agent/inbox/inserted",
    at: 1,
    data: { messageId: "m1", lane: "next-turn", waking: true, source: user },
  },
  { seq: 1, type: "turn/start", at: 2, data: { turn: 1 } },
  { seq: 2, type: "agent/inbox/claimed", at: 3, data: { messageId: "m1", turn: 1 } },
  {
    seq: 3,
    type: "user/message",
    at: 4,
    data: { messageId: "m1", content: [{ type: "text", text: "q" }], source: user },
  },
  {
    seq: 4,
    type: "assistant/message",
    at: 5,
    data: { content: [{ type: "text", text: "a" }], stopReason: "end", model: "scripted" },
  },
  { seq: 5, type: "turn/end", at: 6, data: { turn: 1, reason: "completed" } },
];

describe("taskOf", () => {
  it("keeps the most recent messages for historyLength, all of them when it is larger, none for 0", () => {
    const fold = foldTask(emptyFold(), events);
    expect(taskOf("t", fold, 1).history.map((m) => m.role)).toEqual([Role.ROLE_AGENT]);
    expect(taskOf("t", fold, 10).history).toHaveLength(2);
    expect(taskOf("t", fold, 0).history).toEqual([]);
    expect(taskOf("t", fold).history).toHaveLength(2);
  });
});

describe("contentOf", () => {
  it("reads text as text and data as its JSON; a file part is named as unsupported", () => {
    expect(
      contentOf([
        textPart("hi"),
        { content: { $case: "data", value: { a: 1 } }, metadata: undefined, filename: "", mediaType: "" },
      ]),
    ).toEqual({
      blocks: [
        { type: "text", text: "hi" },
        { type: "text", text: '{"a":1}' },
      ],
    });
    expect(
      contentOf([
        {
          content: { $case: "url", value: "https://x/y.png" },
          metadata: undefined,
          filename: "",
          mediaType: "",
        },
      ]),
    ).toEqual({
      unsupported: "url",
    });
  });
});
