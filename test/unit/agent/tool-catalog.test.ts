import { describe, expect, it } from "vitest";
import { z } from "zod";
import { staticToolSource, ToolCatalog, type ToolSource } from "../../../src/agent/tool-source";
import { anyTool, text } from "../../../src/agent/tools";
import type { SessionHeader } from "../../../src/contract/session";

const tool = (name: string) =>
  anyTool({ name, description: name, schema: z.object({}), run: () => text(name) });

/** A per-session source: `answer` is exempt from filters, like `report` in a continuable child. */
const perSession: ToolSource<unknown> = {
  name: "per-session",
  knows: (name) => /^(dyn_\w+|answer)$/.test(name),
  offer: (header) => [
    { tool: tool(`dyn_${header.label ?? "none"}`) },
    { tool: tool("answer"), exempt: true },
  ],
};

function header(toolFilter?: SessionHeader["options"]["toolFilter"]): SessionHeader {
  return {
    id: "s",
    parentSession: null,
    origin: null,
    delegationDepth: 0,
    createdAt: 0,
    tokenHash: null,
    lineage: [],
    label: "a",
    options: { model: "scripted", ...(toolFilter === undefined ? {} : { toolFilter }) },
  };
}

const names = async (catalog: ToolCatalog<unknown>, h: SessionHeader) =>
  (await catalog.visible(h)).map((t) => t.name);

describe("the tool catalog: every source's tools, under the session's tool filter", () => {
  const catalog = new ToolCatalog([staticToolSource("static", [tool("echo"), tool("lookup")]), perSession]);

  it("offers the union of the sources in order, per session", async () => {
    expect(await names(catalog, header())).toEqual(["echo", "lookup", "dyn_a", "answer"]);
  });

  it("applies allow, then deny, to every source but keeps exempt tools", async () => {
    expect(await names(catalog, header({ allow: ["lookup", "dyn_a"] }))).toEqual([
      "lookup",
      "dyn_a",
      "answer",
    ]);
    expect(await names(catalog, header({ deny: ["echo", "answer"] }))).toEqual(["lookup", "dyn_a", "answer"]);
  });

  it("names the filter entries no source knows", () => {
    expect(catalog.unknownNames({ allow: ["echo", "dyn_x", "nope"], deny: ["answer", "gone"] })).toEqual([
      "nope",
      "gone",
    ]);
  });

  it("refuses a tool offered by two sources, and a source that names a tool twice", async () => {
    const twice = new ToolCatalog([
      staticToolSource("a", [tool("echo")]),
      staticToolSource("b", [tool("echo")]),
    ]);
    await expect(twice.visible(header())).rejects.toThrow(/tool echo is offered twice/);
    expect(() => staticToolSource("c", [tool("x"), tool("x")])).toThrow(/names a tool twice/);
  });
});
