import { describe, expect, it } from "vitest";
import { requestKey } from "../../../src/core/request-key";

describe("a start request's key", () => {
  it("is the same whatever order the fields were written in, and ignores undefined fields", () => {
    const a = requestKey({ provider: "spawn", prompt: [{ type: "text", text: "x" }], label: "l" });
    const b = requestKey({
      label: "l",
      prompt: [{ text: "x", type: "text" }],
      provider: "spawn",
      model: undefined,
    });
    expect(a).toBe(b);
  });

  it("differs when any value differs, arrays keep their order", () => {
    const base = { provider: "spawn", prompt: "x", toolFilter: { allow: ["a", "b"] } };
    const key = requestKey(base);
    expect(requestKey({ ...base, prompt: "y" })).not.toBe(key);
    expect(requestKey({ ...base, label: "l" })).not.toBe(key);
    expect(requestKey({ ...base, toolFilter: { allow: ["b", "a"] } })).not.toBe(key);
  });

  it("leaves out the span the start came under: a retry may come under another span, or none", () => {
    const base = { provider: "spawn", prompt: "x", childId: "c" };
    const key = requestKey(base);
    expect(requestKey({ ...base, trace: { traceId: "a".repeat(32), parentSpanId: "b".repeat(16) } })).toBe(
      key,
    );
    expect(requestKey({ ...base, trace: { traceId: "c".repeat(32) } })).toBe(key);
  });
});
