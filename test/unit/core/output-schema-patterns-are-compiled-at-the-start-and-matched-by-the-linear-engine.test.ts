import { beforeAll, describe, expect, it } from "vitest";
import {
  checkOutputSchema,
  compileOutputSchema,
  loadPatternEngine,
  MAX_SCHEMA_PATTERN_SIZE,
  OUTPUT_MATCH_BUDGET,
  outputValidator,
} from "../../../src/core/json-schema-subset";
import { patternSize } from "../../../src/core/linear-pattern";

/**
 * src/core/json-schema-subset.ts: an `outputSchema`'s patterns, wherever they sit in the schema,
 * are compiled by the start check (a refused one names its place) and matched only through
 * linear-pattern.ts by the `structured_output` validator, under one budget per validator.
 */

const string = (pattern: string) => ({ type: "string", pattern });

function issuesOf(schema: Record<string, unknown>, value: unknown): { path: string; message: string }[] {
  const parsed = outputValidator(schema).safeParse(value);
  return parsed.success
    ? []
    : parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
}

describe("outputSchema patterns (src/core/json-schema-subset.ts)", () => {
  beforeAll(loadPatternEngine);

  it("matches additionalProperties' pattern against undeclared keys only, also when no declared property has a pattern", () => {
    const schema = {
      type: "object",
      properties: { name: { type: "string" } },
      additionalProperties: string("^[0-9]+$"),
    };
    expect(issuesOf(schema, { name: "Ada" })).toEqual([]);
    expect(issuesOf(schema, { name: "Ada", id: "42" })).toEqual([]);
    expect(issuesOf(schema, { name: "Ada", id: "x42" }).map((i) => i.path)).toEqual(["id"]);
  });

  it("the start check compiles every pattern, under properties, items and additionalProperties, and names the place of a refused one", () => {
    const places: [Record<string, unknown>, string][] = [
      [{ type: "object", properties: { a: string("(") } }, "outputSchema.properties.a.pattern"],
      [
        { type: "object", properties: { list: { type: "array", items: string("(") } } },
        "outputSchema.properties.list.items.pattern",
      ],
      [{ type: "object", additionalProperties: string("(") }, "outputSchema.additionalProperties.pattern"],
      // a node with both items and additionalProperties has both walked
      [
        { type: "object", items: { type: "string" }, additionalProperties: string("(?=x)") },
        "outputSchema.additionalProperties.pattern",
      ],
    ];
    for (const [schema, place] of places) {
      const failure = checkOutputSchema(schema);
      expect(failure, place).toMatchObject({ ok: false, code: "INVALID_SCHEMA" });
      expect(failure!.message, place).toContain(`unsupported JSON schema: ${place} `);
    }
    expect(
      checkOutputSchema({ type: "object", properties: { a: { type: "string", pattern: 5 } } }),
    ).toMatchObject({
      code: "INVALID_SCHEMA",
      message: "unsupported JSON schema: outputSchema.properties.a.pattern is not a string",
    });
    expect(checkOutputSchema({ type: "object", properties: { a: string("^[a-z]+$") } })).toBeUndefined();
  });

  it("bounds the patterns of one schema together, not only each one", () => {
    const source = "[a-z]{99}";
    const size = patternSize(source);
    if ("problem" in size) throw new Error(size.problem);
    const fits = Math.floor(MAX_SCHEMA_PATTERN_SIZE / size.size);
    const schema = (n: number) => ({
      type: "object",
      properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, string(source)])),
    });
    expect(checkOutputSchema(schema(fits))).toBeUndefined();
    expect(checkOutputSchema(schema(fits + 1))?.message).toContain(
      `the patterns of outputSchema expand to more than ${MAX_SCHEMA_PATTERN_SIZE} units in total`,
    );
  });

  it("only the pattern keyword is compiled: a property named pattern and pattern keys inside values are data", () => {
    const schema = {
      type: "object",
      properties: {
        pattern: { type: "string", enum: ["(", "["] },
        rule: { type: "object", default: { pattern: "(" } },
      },
    };
    const compiled = compileOutputSchema(schema);
    expect(compiled.ok).toBe(true);
    if (!compiled.ok) return;
    expect(compiled.value.withoutPatterns).toEqual(schema);
    expect(compiled.value.patterns).toBeUndefined();
    expect(issuesOf(schema, { pattern: "(" })).toEqual([]);
  });

  it("the validator matches patterns wherever they sit, with the path of each string that does not match", () => {
    const schema = {
      type: "object",
      properties: {
        code: string("^[A-Z]{2}-\\d{3}$"),
        tags: { type: "array", items: string("^#\\w+$") },
        extra: { type: "object", additionalProperties: string("^\\d+$") },
      },
    };
    expect(issuesOf(schema, { code: "AB-123", tags: ["#a", "#b_2"], extra: { x: "12" } })).toEqual([]);
    expect(issuesOf(schema, { code: "AB-12", tags: ["#a", "b"], extra: { x: "12", y: "1.5" } })).toEqual([
      { path: "code", message: "does not match the pattern ^[A-Z]{2}-\\d{3}$" },
      { path: "tags.1", message: "does not match the pattern ^#\\w+$" },
      { path: "extra.y", message: "does not match the pattern ^\\d+$" },
    ]);
    // the schema's other keywords still apply
    expect(issuesOf({ ...schema, required: ["code"] }, { tags: [] })).toEqual([
      expect.objectContaining({ path: "code" }),
    ]);
  });

  it("a catastrophic pattern against a long run fails the value, with the pattern named", () => {
    const schema = { type: "object", properties: { s: string("^(a+)+$") } };
    expect(issuesOf(schema, { s: `${"a".repeat(50_000)}!` })).toEqual([
      { path: "s", message: "does not match the pattern ^(a+)+$" },
    ]);
    expect(issuesOf(schema, { s: "a".repeat(50_000) })).toEqual([]);
  });

  it("past its budget a validator checks no more strings and says why; the budget spans its answers", () => {
    const source = "^[a-z]+$";
    const size = patternSize(source);
    if ("problem" in size) throw new Error(size.problem);
    const schema = { type: "object", properties: { s: string(source) } };
    // the largest string one full budget pays for, then one character more
    const longest = Math.floor(OUTPUT_MATCH_BUDGET / size.size) - 1;
    const spent =
      /^cannot be checked against the pattern \^\[a-z\]\+\$: this output schema's matching budget/;
    expect(issuesOf({ ...schema }, { s: "a".repeat(longest + 1) })).toEqual([
      { path: "s", message: expect.stringMatching(spent) },
    ]);
    const validated = { ...schema };
    expect(issuesOf(validated, { s: "a".repeat(longest - 10) })).toEqual([]);
    // the same validator (the same schema object) has between 10 and 11 × size left:
    // 11 characters (12 × size) are too much, 9 (10 × size) are not
    expect(issuesOf(validated, { s: "a".repeat(11) })).toEqual([
      { path: "s", message: expect.stringMatching(spent) },
    ]);
    expect(issuesOf(validated, { s: "a".repeat(9) })).toEqual([]);
  });

  it("a stored schema whose pattern does not compile refuses every answer, saying why", () => {
    const schema = { type: "object", properties: { s: string("^(a)\\1$") } };
    expect(issuesOf(schema, { s: "aa" })).toEqual([
      {
        path: "",
        message: expect.stringContaining(
          "backreferences and lookaround are not supported by the linear-time engine",
        ),
      },
    ]);
  });
});
