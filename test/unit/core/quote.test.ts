import { describe, expect, it } from "vitest";
import { quote } from "../../../src/core/quote";

/** Caller input in error messages is quoted shortened (issue 23: a 10,000-character runId was echoed). */
describe("quote", () => {
  it("quotes a short value whole, as JSON does", () => {
    expect(quote("run-1")).toBe('"run-1"');
    expect(quote("a\nb\u0000")).toBe('"a\\nb\\u0000"');
    expect(quote("x".repeat(64))).toBe(`"${"x".repeat(64)}"`);
  });

  it("keeps the first max characters of a longer value and marks the cut", () => {
    expect(quote("x".repeat(10_000))).toBe(`"${"x".repeat(64)}…" (10000 characters)`);
    expect(quote("abcdef", 3)).toBe('"abc…" (6 characters)');
  });

  it("never cuts a character in half", () => {
    const emoji = "😀".repeat(40); // 80 UTF-16 units
    const quoted = quote(emoji);
    expect(quoted.startsWith(`"${"😀".repeat(32)}…"`)).toBe(true);
    expect(quoted).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it("quotes what is not a string as text", () => {
    expect(quote(42)).toBe('"42"');
    expect(quote(undefined)).toBe('"undefined"');
  });
});
