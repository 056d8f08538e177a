import { describe, expect, it } from "vitest";
import { api, createSession } from "../support/api";
import { assistantTexts, waitForEvents } from "../support/logs";

describe("a session answers messages through its turn driver", () => {
  it("echoes a plain message in one turn with contiguous seq", async () => {
    const { id } = await createSession();
    const sent = await api("POST", `/v1/sessions/${id}/messages`, { body: { content: "hello" } });
    expect(sent.status).toBe(202);
    expect(sent.body.messageId).toMatch(/^msg_/);
    const events = await waitForEvents(id, (es) => es.some((e) => e.type === "turn/end"));
    expect(events.map((e) => e.type)).toEqual([
      "agent/inbox/inserted",
      "turn/start",
      "agent/inbox/claimed",
      "user/message",
      "assistant/message",
      "turn/end",
    ]);
    expect(events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(assistantTexts(events)).toEqual(["echo: hello"]);
    expect(events[5]!.data).toEqual({ turn: 1, reason: "completed" });
  });
});
