import * as z from "zod";
import { type Failure, fail, type Outcome, ok } from "../contract/errors";
import { compilePattern, type LinearPattern, PatternBudget } from "./linear-pattern";

/**
 * The JSON-schema subset accepted for `outputSchema`: object-rooted, plain JSON values, and only
 * keywords that every model provider's tool parameters understand. Anything else is refused
 * before a child exists.
 *
 * Its `pattern`s are the caller's code run in the child's object: they are compiled when the start
 * is received (linear-pattern.ts: RE2, bounded in size) and matched only through that module, never
 * as JS RegExps (which backtrack): an invalid or unsupported pattern refuses the start.
 */

/** The largest total size (linear-pattern.ts `patternSize`) of all the patterns of one schema. */
export const MAX_SCHEMA_PATTERN_SIZE = 2000;
/**
 * The matching work (linear-pattern.ts `PatternBudget`) the answers checked by one validator may
 * cost in total: a child's answers, as long as its object stays loaded. Measured in workerd: about
 * 0.2 s for the most expensive patterns of the largest size (`\p{L}{1,499}` against letters);
 * 50,000 characters of answers for a pattern of size 20, 1,000 for one of size 1,000.
 */
export const OUTPUT_MATCH_BUDGET = 1_000_000;

const KEYWORDS = new Set([
  "type",
  "properties",
  "required",
  "items",
  "enum",
  "const",
  "description",
  "title",
  "additionalProperties",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "pattern",
  "format",
  "default",
  "nullable",
]);
const TYPES = new Set(["object", "array", "string", "number", "integer", "boolean", "null"]);

/** What `checkOutputSchema`, `compileOutputSchema` and `outputValidator` need loaded first. */
export { loadPatternEngine } from "./linear-pattern";

export function checkOutputSchema(schema: unknown): Failure | undefined {
  const compiled = compileOutputSchema(schema);
  return compiled.ok ? undefined : compiled;
}

/** An output schema, checked, with its patterns compiled. */
export interface CompiledOutputSchema {
  /** The schema without its `pattern` keywords: for a validator that would run them as JS RegExps. */
  readonly withoutPatterns: Record<string, unknown>;
  /** Where the patterns apply (undefined: the schema has none). */
  readonly patterns: PatternNode | undefined;
}

/** The patterns of a schema node and of the nodes below it; absent where there are none. */
interface PatternNode {
  pattern?: LinearPattern;
  /** Every declared property (a property without patterns maps to undefined). */
  properties?: Map<string, PatternNode | undefined>;
  additionalProperties?: PatternNode;
  items?: PatternNode;
}

export function compileOutputSchema(schema: unknown): Outcome<CompiledOutputSchema> {
  if (!isPlainObject(schema) || schema.type !== "object") {
    return fail(
      "INVALID_SCHEMA",
      'unsupported JSON schema: outputSchema must be an object schema ({"type":"object"})',
    );
  }
  const walked = walk(schema, "outputSchema", 0, { size: 0 });
  if ("problem" in walked) return fail("INVALID_SCHEMA", `unsupported JSON schema: ${walked.problem}`);
  return ok({ withoutPatterns: walked.schema, patterns: walked.patterns });
}

/**
 * The validator of a child's `structured_output` arguments: the schema's other keywords (zod's
 * JSON-schema conversion), then its patterns through linear-pattern.ts under one budget of
 * `OUTPUT_MATCH_BUDGET`. One per schema object (the child's header keeps its schema), so the budget
 * spans the child's answers. A stored schema that does not compile (started before patterns were
 * checked at the start) refuses every answer, saying why.
 */
export function outputValidator(schema: Record<string, unknown>): z.ZodType {
  let validator = validators.get(schema);
  if (!validator) {
    const compiled = compileOutputSchema(schema);
    validator = compiled.ok ? patternChecked(compiled.value) : refuseAll(compiled.message);
    validators.set(schema, validator);
  }
  return validator;
}

const validators = new WeakMap<Record<string, unknown>, z.ZodType>();

function patternChecked({ withoutPatterns, patterns }: CompiledOutputSchema): z.ZodType {
  const base = z.fromJSONSchema(withoutPatterns as Parameters<typeof z.fromJSONSchema>[0]);
  if (!patterns) return base;
  const budget = new PatternBudget(OUTPUT_MATCH_BUDGET);
  return base.superRefine((value, ctx) => {
    for (const issue of mismatches(patterns, value, [], budget))
      ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  });
}

function refuseAll(message: string): z.ZodType {
  return z.unknown().superRefine((_value, ctx) => ctx.addIssue({ code: "custom", message }));
}

/** The strings of `value` that their pattern does not match (or that the budget cannot pay for). */
function* mismatches(
  node: PatternNode,
  value: unknown,
  path: (string | number)[],
  budget: PatternBudget,
): Generator<{ path: (string | number)[]; message: string }> {
  const { pattern } = node;
  if (pattern && typeof value === "string") {
    if (!budget.spend(pattern, value))
      yield {
        path,
        message: `cannot be checked against the pattern ${pattern.source}: this output schema's matching budget (${OUTPUT_MATCH_BUDGET} units, pattern size × characters) is spent`,
      };
    else if (!pattern.test(value)) yield { path, message: `does not match the pattern ${pattern.source}` };
  }
  if (isPlainObject(value) && (node.properties || node.additionalProperties)) {
    for (const [key, item] of Object.entries(value)) {
      const below = node.properties?.has(key) ? node.properties.get(key) : node.additionalProperties;
      if (below) yield* mismatches(below, item, [...path, key], budget);
    }
  }
  if (Array.isArray(value) && node.items) {
    for (const [index, item] of value.entries())
      yield* mismatches(node.items, item, [...path, index], budget);
  }
}

type Walked = { schema: Record<string, unknown>; patterns: PatternNode | undefined } | { problem: string };

/**
 * Checks one schema node against the subset and compiles its patterns, adding their sizes to
 * `total`: the node without its `pattern` keywords, and where its patterns apply.
 */
function walk(node: unknown, path: string, depth: number, total: { size: number }): Walked {
  if (depth > 32) return { problem: `${path} nests too deeply` };
  if (!isPlainObject(node)) return { problem: `${path} is not a schema object` };
  for (const [key, value] of Object.entries(node)) {
    if (!KEYWORDS.has(key)) return { problem: `${path}.${key} is not a supported keyword` };
    if (!isJsonValue(value)) return { problem: `${path}.${key} is not a plain JSON value` };
  }
  const type = node.type;
  if (type !== undefined) {
    const types = Array.isArray(type) ? type : [type];
    if (types.length === 0 || !types.every((t) => typeof t === "string" && TYPES.has(t)))
      return { problem: `${path}.type is invalid` };
  }
  const { pattern: source, ...rest } = node;
  const patterns: PatternNode = {};
  if (source !== undefined) {
    if (typeof source !== "string") return { problem: `${path}.pattern is not a string` };
    const compiled = compilePattern(source);
    if (!compiled.ok) return { problem: `${path}.pattern ${compiled.problem}` };
    total.size += compiled.pattern.size;
    if (total.size > MAX_SCHEMA_PATTERN_SIZE)
      return {
        problem: `${path}.pattern: the patterns of outputSchema expand to more than ${MAX_SCHEMA_PATTERN_SIZE} units in total`,
      };
    patterns.pattern = compiled.pattern;
  }
  const schema: Record<string, unknown> = rest;
  if (node.properties !== undefined) {
    if (!isPlainObject(node.properties)) return { problem: `${path}.properties is not an object` };
    const properties: [string, unknown][] = [];
    const below = new Map<string, PatternNode | undefined>();
    for (const [name, child] of Object.entries(node.properties)) {
      const walked = walk(child, `${path}.properties.${name}`, depth + 1, total);
      if ("problem" in walked) return walked;
      properties.push([name, walked.schema]);
      below.set(name, walked.patterns);
    }
    // fromEntries defines own properties: a property named __proto__ stays a property
    schema.properties = Object.fromEntries(properties);
    // kept even when no declared property has a pattern: a declared key is never matched against
    // additionalProperties' pattern
    patterns.properties = below;
  }
  if (
    node.required !== undefined &&
    (!Array.isArray(node.required) || !node.required.every((r) => typeof r === "string"))
  ) {
    return { problem: `${path}.required is not a string array` };
  }
  for (const key of ["items", "additionalProperties"] as const) {
    // additionalProperties may also be a boolean
    if (node[key] === undefined || (key === "additionalProperties" && !isPlainObject(node[key]))) continue;
    const walked = walk(node[key], `${path}.${key}`, depth + 1, total);
    if ("problem" in walked) return walked;
    schema[key] = walked.schema;
    if (walked.patterns) patterns[key] = walked.patterns;
  }
  const anyPattern =
    patterns.pattern ||
    [...(patterns.properties?.values() ?? [])].some((p) => p !== undefined) ||
    patterns.items ||
    patterns.additionalProperties;
  return { schema, patterns: anyPattern ? patterns : undefined };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.getPrototypeOf(value) === Object.prototype
  );
}

function isJsonValue(value: unknown): boolean {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isJsonValue);
  if (isPlainObject(value)) return Object.values(value).every(isJsonValue);
  return false;
}
