import { expect, it } from "vitest";
import { z } from "zod";
import { createSubagents, defineTool } from "../../src/worker";

/**
 * A tool's input is what the model fills in and what every session's MCP face lists: it must be
 * an object (model APIs and MCP take nothing else). A tool whose zod input describes anything
 * else is refused when the Worker's module loads, by `defineTool` and by `createSubagents` (for a
 * tool not made by `defineTool`), with an error naming the tool; objects of every zod form pass.
 */

const run = () => "ok";

it("refuses a non-object input at defineTool, naming the tool and what its input describes", () => {
  const inputs: [z.ZodType, string][] = [
    [z.string(), "string"],
    [z.number(), "number"],
    [z.array(z.object({})), "array"],
    [z.union([z.object({ a: z.string() }), z.object({ b: z.string() })]), "anyOf"],
    [z.object({}).nullable(), "anyOf"],
    [z.any(), "any value"],
  ];
  for (const [input, described] of inputs)
    expect(() => defineTool({ name: "lookup", description: "d", input, run }), described).toThrow(
      new RegExp(`defineTool: tool "lookup": its input must be a zod object schema.*describes ${described}`),
    );
});

it("refuses a non-object input at createSubagents for a tool not made by defineTool", () => {
  const handMade = { name: "handmade", description: "d", input: z.string(), run };
  expect(() => createSubagents({ tools: [handMade as never] })).toThrow(
    /createSubagents: tool "handmade": its input must be a zod object schema/,
  );
});

it("accepts objects in every zod form", () => {
  const inputs: z.ZodType[] = [
    z.object({}),
    z.strictObject({ a: z.string() }),
    z.object({ a: z.string().optional() }).describe("args"),
    z.object({ a: z.string() }).transform((v) => v.a),
    z.preprocess((v) => v, z.object({ a: z.string() })),
    z.intersection(z.object({ a: z.string() }), z.object({ b: z.number() })),
    z.record(z.string(), z.number()),
    z.lazy(() => z.object({ a: z.string() })),
  ];
  for (const input of inputs) {
    const tool = defineTool({ name: "fine", description: "d", input, run });
    expect(createSubagents({ tools: [tool] }).basePath).toBe("");
  }
});
