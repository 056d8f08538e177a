import type * as z from "zod";
import { type Failure, fail, type Outcome, ok } from "../contract/errors";
import { MAX_BODY_BYTES } from "../contract/wire";

/**
 * Reads and validates a JSON body. Oversized bodies are refused before anything is read past
 * the limit (413); malformed JSON is its own error before the schema runs; an empty body is `{}`.
 * With `idempotencyKeyHeader`, an `Idempotency-Key` header is the body's `idempotencyKey` (the
 * same value in both is fine; two different ones are refused).
 */
export async function readBody<T>(
  request: Request,
  schema: z.ZodType<T>,
  { idempotencyKeyHeader = false }: { idempotencyKeyHeader?: boolean } = {},
): Promise<Outcome<T>> {
  const body = await boundedText(request);
  if (!body.ok) return body;
  const text = body.value;
  let value: unknown = {};
  if (text.trim().length > 0) {
    const type = request.headers.get("content-type") ?? "";
    if (!/^application\/json\b/i.test(type))
      return fail("INVALID_REQUEST", "content-type must be application/json");
    try {
      value = JSON.parse(text);
    } catch {
      return fail("MALFORMED_JSON", "the body is not valid JSON");
    }
  }
  const header = idempotencyKeyHeader ? request.headers.get("idempotency-key") : null;
  if (header !== null && value !== null && typeof value === "object" && !Array.isArray(value)) {
    const body = value as Record<string, unknown>;
    if (body.idempotencyKey !== undefined && body.idempotencyKey !== header)
      return fail("INVALID_REQUEST", "the Idempotency-Key header and the body's idempotencyKey differ");
    value = { ...body, idempotencyKey: header };
  }
  return validate(value, schema);
}

/**
 * Reads a body as text with the same limits as `readBody` (size, strict UTF-8, JSON content
 * type when not empty), for routes that need its exact bytes (a signed callback).
 */
export async function readText(request: Request): Promise<Outcome<string>> {
  const text = await boundedText(request);
  if (!text.ok) return text;
  if (text.value.length > 0 && !/^application\/json\b/i.test(request.headers.get("content-type") ?? ""))
    return fail("INVALID_REQUEST", "content-type must be application/json");
  return text;
}

/**
 * Reads a JSON body's exact text with the limits of every route (size: 413; strict UTF-8; JSON
 * nested deeper than MAX_JSON_DEPTH: 400), for a route that hands the text to a protocol layer of
 * its own (the MCP face). Text that is not JSON, and the content type, are that layer's to answer
 * in its own protocol (a JSON-RPC parse error, a 415), so they pass through unchanged.
 */
export async function readJsonText(request: Request): Promise<Outcome<string>> {
  const text = await boundedText(request);
  if (!text.ok) return text;
  let value: unknown;
  try {
    value = JSON.parse(text.value);
  } catch {
    return text;
  }
  if (depthExceeds(value, MAX_JSON_DEPTH))
    return fail("INVALID_REQUEST", `the input nests deeper than ${MAX_JSON_DEPTH} levels`);
  return text;
}

/** Nesting deeper than this is refused before any schema or serializer walks it. */
export const MAX_JSON_DEPTH = 128;

export function validate<T>(value: unknown, schema: z.ZodType<T>): Outcome<T> {
  if (depthExceeds(value, MAX_JSON_DEPTH)) {
    return fail("INVALID_REQUEST", `the input nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return ok(parsed.data);
  const issues = parsed.error.issues.map((i) => ({
    path: i.path.map(String),
    message: i.message,
    code: i.code,
  }));
  const first = issues[0];
  return fail(
    "INVALID_REQUEST",
    first ? `${first.path.join(".") || "body"}: ${first.message}` : "invalid request",
    issues,
  );
}

export function queryOf(request: Request): Record<string, string> {
  return Object.fromEntries(new URL(request.url).searchParams);
}

/**
 * The body as text: refused past MAX_BODY_BYTES before anything is read past the limit (413, also
 * when no length is declared), and unless it is strict UTF-8 (never silently replaced).
 */
async function boundedText(request: Request): Promise<Outcome<string>> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) return tooLarge();
  const text = await readLimited(request);
  if (text === undefined) return tooLarge();
  if (text === null) return fail("MALFORMED_JSON", "the body is not valid UTF-8");
  return ok(text);
}

function tooLarge(): Failure {
  return fail("PAYLOAD_TOO_LARGE", `the body exceeds ${MAX_BODY_BYTES} bytes`);
}

async function readLimited(request: Request): Promise<string | undefined | null> {
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(all);
  } catch {
    return null; // not UTF-8: never silently replaced
  }
}

/** Iterative depth check (a recursive one would itself overflow on hostile input). */
export function depthExceeds(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== "object" || node === null) continue;
    if (depth >= limit) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}
