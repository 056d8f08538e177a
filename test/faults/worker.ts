/**
 * The fault campaign's Worker: the product's Worker (src/index.ts) plus one user tool, so the
 * campaign's out-of-process half (far-side.ts) also runs a tool of the embedding Worker that
 * answers, throws or hangs past its timeout, while the object running it is reset.
 */
import { z } from "zod";
import { createSubagents, defineTool } from "../../src/worker";

export const FAR_TOOL_TIMEOUT_MS = 300;

const farTool = defineTool({
  name: "far_tool",
  description: "Answers `tool <tag>`, throws, or hangs past its timeout, as told.",
  input: z.object({ tag: z.string(), behaviour: z.enum(["answer", "throw", "hang"]) }),
  timeoutMs: FAR_TOOL_TIMEOUT_MS,
  async run({ tag, behaviour }) {
    if (behaviour === "throw") throw new Error(`tool failed ${tag}`);
    if (behaviour === "hang") await new Promise(() => {});
    return `tool ${tag}`;
  },
});

const subagents = createSubagents<Env>({ tools: [farTool] });

export const { SessionObject, RegistryObject, SubagentsEntrypoint } = subagents;
export default { fetch: subagents.fetch } satisfies ExportedHandler<Env>;
