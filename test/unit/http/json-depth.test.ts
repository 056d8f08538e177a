import { z } from "zod";
import { describe, expect, it } from "vitest";
import { depthExceeds, MAX_JSON_DEPTH, validate } from "../../../src/http/body";

/** The nesting limit of every request body (semantics.md §13): 128 levels pass, 129 do not. */

/** A value whose objects and arrays nest exactly `levels` deep (a scalar at the bottom). */
function nestedTo(levels: number): unknown {
  let value: unknown = "leaf";
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? { a: value } : [value];
  return value;
}

describe("the JSON nesting limit", () => {
  it("passes 128 levels and refuses 129, before any schema runs", () => {
    expect(MAX_JSON_DEPTH).toBe(128);
    expect(depthExceeds(nestedTo(128), MAX_JSON_DEPTH)).toBe(false);
    expect(depthExceeds(nestedTo(129), MAX_JSON_DEPTH)).toBe(true);
    expect(validate(nestedTo(128), z.unknown()).ok).toBe(true);
    expect(validate(nestedTo(129), z.unknown())).toMatchObject({
      ok: false,
      code: "INVALID_REQUEST",
      message: "the input nests deeper than 128 levels",
    });
    // scalars and flat values never count as nesting
    expect(depthExceeds("x", 0)).toBe(false);
    expect(depthExceeds({ a: 1, b: [1, 2] }, 2)).toBe(false);
  });
});
