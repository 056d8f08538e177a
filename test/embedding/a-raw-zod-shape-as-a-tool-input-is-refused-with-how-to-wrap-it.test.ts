import { expect, it } from "vitest";
import { z } from "zod";
import { createSubagents, defineTool } from "../../src/worker";

/**
 * A raw zod shape passed as a tool's input (`{ city: z.string() }` instead of
 * `z.object({ city: z.string() })`) is refused when the Worker's module loads, by `defineTool` and
 * by `createSubagents`, with an error that names the tool, says the input must be a zod object
 * schema and shows the wrapping, never that the tool "is not made by defineTool".
 */

const run = () => "ok";
const shape = { city: z.string(), days: z.number().optional() };

it("defineTool names the tool and shows the shape wrapped in z.object", () => {
  expect(() => defineTool({ name: "weather", description: "d", input: shape as never, run })).toThrow(
    'defineTool: tool "weather": its input must be a zod object schema, not a raw shape: write z.object({ city, days })',
  );
});

it("createSubagents says the same of a tool made by hand, not that defineTool did not make it", () => {
  const handMade = { name: "weather", description: "d", input: shape, run };
  const refusal = (() => {
    try {
      createSubagents({ tools: [handMade as never] });
    } catch (error) {
      return (error as Error).message;
    }
  })();
  expect(refusal).toBe(
    'createSubagents: tool "weather": its input must be a zod object schema, not a raw shape: write z.object({ city, days })',
  );
});
