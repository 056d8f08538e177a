import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createSubagents, defineTool } from "../../src/worker";
import { mcp } from "../../src/protocols/mcp";
import { subagents } from "./worker";

/** Misconfiguration is refused when the Worker's module loads, never later in a turn. */

const tool = (name: string) =>
  defineTool({ name, description: "a tool", input: z.object({}), run: () => "ok" });

describe("createSubagents refuses a misconfigured runtime at once", () => {
  it("refuses tools named like a built-in tool, named twice, or with names models reject", () => {
    for (const name of [
      "echo",
      "subagent",
      "subagent_remote",
      "send_message",
      "interrupt_agent",
      "list_agents",
      "task_output",
      "task_kill",
      "structured_output",
      "report",
    ])
      expect(() => createSubagents({ tools: [tool(name)] }), name).toThrow(
        `tool name "${name}" is taken by a built-in tool`,
      );
    expect(() => createSubagents({ tools: [tool("mcp__server__x")] })).toThrow(/taken by a built-in tool/);
    expect(() => createSubagents({ tools: [tool("lookup"), tool("lookup")] })).toThrow(
      'two tools are named "lookup"',
    );
    for (const name of ["", "has space", "a".repeat(65), "dots.are.not"])
      expect(() => createSubagents({ tools: [tool(name)] }), name).toThrow(/must match/);
    expect(() =>
      createSubagents({ tools: [{ name: "raw", description: "not made by defineTool" } as never] }),
    ).toThrow('tool "raw" is not made by defineTool');
  });

  it("refuses a protocol that is not one of the entries' (mcp, a2a, acp, openai, workersAi), one given twice, and protocols that are no array", () => {
    expect(() => createSubagents({ protocols: [{ protocol: "mcp" }] as never })).toThrow(
      "a protocol must be mcp, a2a, acp, openai or workersAi as subagents-edge/mcp, /a2a, /acp, /openai or /workers-ai export it",
    );
    expect(() => createSubagents({ protocols: [{ ...mcp, protocol: "grpc" }] as never })).toThrow(
      "a protocol must be mcp, a2a, acp, openai or workersAi",
    );
    expect(() => createSubagents({ protocols: [mcp, mcp] })).toThrow("the mcp protocol is given twice");
    expect(() => createSubagents({ protocols: mcp as never })).toThrow("protocols must be an array");
  });

  it("refuses model prefixes that shadow the runtime's own or are not names, and factories that are not functions", () => {
    const model = () => ({
      generate: async () => ({ content: [], toolCalls: [], stopReason: "end" as const }),
    });
    expect(() => createSubagents({ models: { scripted: model } })).toThrow(
      'the model prefix "scripted" is the runtime\'s own',
    );
    expect(() => createSubagents({ models: { external: model } })).toThrow(/is the runtime's own/);
    for (const prefix of ["with:colon", "", "-dash", "sp ace"])
      expect(() => createSubagents({ models: { [prefix]: model } }), prefix).toThrow(/must match/);
    expect(() => createSubagents({ models: { mine: "not a function" as never } })).toThrow(
      "models.mine must be a function (env) => ModelClient",
    );
  });

  it("normalizes the base path and refuses one that is not a path", () => {
    expect(subagents.basePath).toBe("/agents"); // configured as "/agents/"
    expect(createSubagents().basePath).toBe("");
    expect(createSubagents({ basePath: "/a/b" }).basePath).toBe("/a/b");
    for (const basePath of ["agents", "/a b", "/a?b", "/a#b", "/a//b", "/a/../b", "/./a"])
      expect(() => createSubagents({ basePath }), basePath).toThrow(/is not a path like "\/agents"/);
  });
});
