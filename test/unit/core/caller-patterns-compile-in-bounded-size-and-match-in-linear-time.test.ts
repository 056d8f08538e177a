import { beforeAll, describe, expect, it } from "vitest";
import {
  compilePattern,
  type LinearPattern,
  loadPatternEngine,
  MAX_PATTERN_LENGTH,
  MAX_PATTERN_SIZE,
  PatternBudget,
  patternSize,
} from "../../../src/core/linear-pattern";

/**
 * src/core/linear-pattern.ts: a caller's pattern is compiled by RE2 after its size is bounded,
 * and matched in linear time; what RE2 cannot run is refused, saying so.
 */

function compiled(source: string): LinearPattern {
  const result = compilePattern(source);
  if (!result.ok) throw new Error(`${source} was refused: ${result.problem}`);
  return result.pattern;
}

function problemOf(source: string): string {
  const result = compilePattern(source);
  if (result.ok) throw new Error(`${source} was accepted`);
  return result.problem;
}

function sizeOf(source: string): number {
  const scanned = patternSize(source);
  if ("problem" in scanned) throw new Error(`${source}: ${scanned.problem}`);
  return scanned.size;
}

/** Ordinary patterns and inputs on both sides of each: RE2 must answer as a JS RegExp does. */
const ORDINARY: [string, string[]][] = [
  ["^\\d{3}-\\d{4}$", ["555-1234", "555-12345", "55-1234", "x555-1234"]],
  ["^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$", ["me@example.com", "me@example", "@example.com"]],
  ["^(?:\\d{1,3}\\.){3}\\d{1,3}$", ["10.0.0.1", "10.0.0", "10.0.0.1.2"]],
  ["^(red|green|blue)$", ["red", "green", "blu", "redgreen"]],
  ["colou?r", ["a color", "a colour", "a colr"]],
  ["^[^\\s@]+$", ["word", "two words", ""]],
  ["\\bcat\\b", ["a cat sat", "concatenate"]],
  ["^\\w+\\s\\W$", ["abc !", "abc a", "ab_1 ?"]],
  ["^[\\u0041-\\u005A]{2}\\u002D\\x41$", ["AB-A", "ab-A", "AB_A"]],
  ["^\\p{Lu}\\p{Ll}+$", ["Élan", "élan", "E"]],
  ["^(?<year>\\d{4})-(?<month>0[1-9]|1[0-2])$", ["2024-12", "2024-13"]],
  ["^.{2,4}$", ["ab", "abcd", "a", "abcde"]],
  ["^a*?b+?c{0,2}$", ["b", "aabbcc", "abccc"]],
  ["^[^]x$", ["zx", "x"]],
  ["^\\u{1F600}+$", ["😀😀", "😀a"]],
];

describe("caller patterns (src/core/linear-pattern.ts)", () => {
  beforeAll(loadPatternEngine);

  it("ordinary patterns (classes, anchors, \\d, quantifiers, alternation, groups, escapes) match exactly as a JS RegExp with the u flag does", () => {
    for (const [source, inputs] of ORDINARY) {
      const pattern = compiled(source);
      const js = new RegExp(source, "u");
      for (const input of inputs) expect(pattern.test(input), `${source} on ${input}`).toBe(js.test(input));
      // every row has an input on each side, so agreement is not a constant answer
      expect(new Set(inputs.map((input) => js.test(input))).size, source).toBe(2);
    }
  });

  it("is not anchored, as JSON Schema's pattern is not", () => {
    expect(compiled("b+").test("aaabbbccc")).toBe(true);
    expect(compiled("^b+").test("aaabbbccc")).toBe(false);
  });

  it("a catastrophic pattern for a backtracking engine answers against a long run and against a short one", () => {
    const pattern = compiled("^(a+)+$");
    expect(pattern.test(`${"a".repeat(100_000)}!`)).toBe(false);
    expect(pattern.test(`${"a".repeat(33)}!`)).toBe(false);
    expect(pattern.test("a".repeat(33))).toBe(true);
  });

  it("an invalid pattern is refused as not a regular expression, without echoing the pattern", () => {
    const long = `${"x".repeat(500)}(`;
    expect(problemOf(long)).toMatch(/^is not a valid regular expression \(ECMA-262 with the u flag\): /);
    expect(problemOf(long)).not.toContain("xxxxxxxx");
    for (const source of ["(unclosed", "[z-a]", "a**", "x{2,1}", "\\"]) {
      expect(problemOf(source), source).toMatch(
        /^is not a valid regular expression \(ECMA-262 with the u flag\): /,
      );
    }
  });

  it("an identity escape JS accepts only without the u flag is refused, not guessed at (\\a, \\z, \\- outside a class)", () => {
    for (const source of ["\\a", "a\\z", "a\\-b", "\\Qx\\E"]) {
      expect(problemOf(source), source).toMatch(/^is not a valid regular expression/);
    }
  });

  it("backreferences and lookaround, valid JS that RE2 cannot run, are refused saying so", () => {
    for (const source of [
      "^(a)\\1$",
      "(?<x>a)\\k<x>",
      "a(?=b)",
      "a(?!b)",
      "(?<=a)b",
      "(?<!a)b",
      "(a)(b)(c)\\3",
    ]) {
      expect(problemOf(source), source).toBe(
        "backreferences and lookaround are not supported by the linear-time engine (RE2)",
      );
    }
  });

  it("a construct RE2 rejects otherwise is refused with RE2's reason", () => {
    // [\b] is a backspace in a JS class; RE2 has no such escape
    expect(problemOf("[\\b]")).toMatch(/^is not supported by the linear-time engine \(RE2\): .*\\b/);
  });

  it("size: literals and classes count one each; a quantifier adds one; a counted repetition counts its copies, nested ones multiply", () => {
    const unit = sizeOf("[a-z]");
    expect(sizeOf("abc")).toBe(3 * sizeOf("a"));
    expect(sizeOf("[a-z]*")).toBe(unit + 1);
    expect(sizeOf("[a-z]{7}")).toBe(7 * (unit + 1));
    expect(sizeOf("[a-z]{2,7}")).toBe(sizeOf("[a-z]{7}"));
    expect(sizeOf("[a-z]{7,}")).toBe(8 * (unit + 1));
    expect(sizeOf("(?:[a-z]{7}){3}")).toBeGreaterThanOrEqual(3 * sizeOf("[a-z]{7}"));
    expect(sizeOf("(?:(?:x{10}){10}){5}")).toBeGreaterThanOrEqual(500);
    // braces inside classes and escapes are not quantifiers
    expect(sizeOf("[{}]\\u{41}\\p{L}")).toBe(3);
  });

  it("a pattern past the size limit is refused before it is compiled; one at the limit compiles", () => {
    const atLimit = `a{${MAX_PATTERN_SIZE / 2}}`;
    expect(sizeOf(atLimit)).toBe(MAX_PATTERN_SIZE);
    expect(compiled(atLimit).size).toBe(MAX_PATTERN_SIZE);
    // RE2 itself allows these (every repetition at most 1000), and compiling them takes seconds
    for (const source of [`a{${MAX_PATTERN_SIZE / 2 + 1}}`, "(?:a{100}){10}", "[a-c]{1,999}".repeat(80)]) {
      const problem =
        source.length > MAX_PATTERN_LENGTH ? /longer than/ : /^expands to \d+ units, more than /;
      expect(problemOf(source), source.slice(0, 40)).toMatch(problem);
    }
    expect(problemOf("x".repeat(MAX_PATTERN_LENGTH + 1))).toBe(
      `is longer than ${MAX_PATTERN_LENGTH} characters`,
    );
  });

  it("a budget pays for size × (length + 1) per string and refuses, taking nothing, what it cannot pay", () => {
    const pattern = compiled("^[a-z]+$");
    const input = "abcdefghij";
    const cost = pattern.size * (input.length + 1);
    const budget = new PatternBudget(2 * cost + cost - 1);
    expect(budget.spend(pattern, input)).toBe(true);
    expect(budget.spend(pattern, input)).toBe(true);
    expect(budget.spend(pattern, input)).toBe(false);
    // the refused spend took nothing: a cheaper string still fits in what is left
    expect(budget.spend(pattern, input.slice(0, 5))).toBe(true);
  });
});
