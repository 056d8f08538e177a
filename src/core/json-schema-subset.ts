import { type Failure, fail } from "../contract/errors";

/**
 * The JSON-schema subset accepted for `outputSchema`: object-rooted, plain JSON values, and only
 * keywords that every model provider's tool parameters understand. Anything else is refused
 * before a child exists.
 */

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

export function checkOutputSchema(schema: unknown): Failure | undefined {
  if (!isPlainObject(schema) || schema.type !== "object") {
    return fail(
      "INVALID_SCHEMA",
      'unsupported JSON schema: outputSchema must be an object schema ({"type":"object"})',
    );
  }
  const problem = walk(schema, "outputSchema", 0);
  return problem ? fail("INVALID_SCHEMA", `unsupported JSON schema: ${problem}`) : undefined;
}

function walk(node: unknown, path: string, depth: number): string | undefined {
  if (depth > 32) return `${path} nests too deeply`;
  if (!isPlainObject(node)) return `${path} is not a schema object`;
  for (const [key, value] of Object.entries(node)) {
    if (!KEYWORDS.has(key)) return `${path}.${key} is not a supported keyword`;
    if (!isJsonValue(value)) return `${path}.${key} is not a plain JSON value`;
  }
  const type = node.type;
  if (type !== undefined) {
    const types = Array.isArray(type) ? type : [type];
    if (types.length === 0 || !types.every((t) => typeof t === "string" && TYPES.has(t)))
      return `${path}.type is invalid`;
  }
  if (node.properties !== undefined) {
    if (!isPlainObject(node.properties)) return `${path}.properties is not an object`;
    for (const [name, child] of Object.entries(node.properties)) {
      const problem = walk(child, `${path}.properties.${name}`, depth + 1);
      if (problem) return problem;
    }
  }
  if (
    node.required !== undefined &&
    (!Array.isArray(node.required) || !node.required.every((r) => typeof r === "string"))
  ) {
    return `${path}.required is not a string array`;
  }
  if (node.items !== undefined) return walk(node.items, `${path}.items`, depth + 1);
  if (isPlainObject(node.additionalProperties))
    return walk(node.additionalProperties, `${path}.additionalProperties`, depth + 1);
  return undefined;
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
