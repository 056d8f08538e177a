import { describe, expect, it } from "vitest";
import { promptParams } from "../../../src/providers/acp-protocol";

describe("ACP session/prompt", () => {
  it("sends the prompt's text, and the span that started the run as _meta.traceparent when there is one", () => {
    const prompt = [
      { type: "text" as const, text: "first" },
      { type: "text" as const, text: "second" },
    ];
    expect(promptParams("s1", prompt)).toEqual({
      sessionId: "s1",
      prompt: [{ type: "text", text: "first\nsecond" }],
    });
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    expect(promptParams("s1", prompt, traceparent)).toEqual({
      sessionId: "s1",
      prompt: [{ type: "text", text: "first\nsecond" }],
      _meta: { traceparent },
    });
  });
});
