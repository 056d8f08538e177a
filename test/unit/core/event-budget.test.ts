import { describe, expect, it } from "vitest";
import { byteLength, fitEvent, TRUNCATION_MARKER } from "../../../src/core/event-budget";

describe("the event row budget (semantics.md §1.2)", () => {
  it("leaves an event that fits untouched", () => {
    const data = { content: [{ type: "text", text: "small" }] };
    expect(fitEvent(data)).toEqual({ data, truncated: false });
  });

  it("cuts the longest text so the row fits, keeps the rest, and marks the cut", () => {
    const data = {
      name: "echo",
      content: [
        { type: "text", text: "é".repeat(400_000) },
        { type: "text", text: "keep me" },
      ],
    };
    const { data: fitted, truncated } = fitEvent(data, 100_000);
    expect(truncated).toBe(true);
    expect(byteLength(JSON.stringify(fitted))).toBeLessThanOrEqual(100_000);
    expect(fitted.content[0]!.text.endsWith(TRUNCATION_MARKER)).toBe(true);
    expect(fitted.content[1]!.text).toBe("keep me");
    expect(fitted.name).toBe("echo");
    expect(data.content[0]!.text.length).toBe(400_000); // the input is not mutated
  });
});
