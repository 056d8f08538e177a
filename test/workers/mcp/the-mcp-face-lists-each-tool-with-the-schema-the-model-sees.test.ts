import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { createSession, sendMessage, workerFetch } from "../../support/api";
import { fakeRequestsMentioning } from "../../support/fake-openai";
import { waitForTurnEnds } from "../../support/logs";

/**
 * A session's MCP face lists each tool with the JSON schema its model is shown: an MCP client
 * (the official SDK's) driving the session sees a remote MCP server's tool arguments
 * (`mcp__<server>__<tool>`), and every other tool's, exactly as the model's request carries them.
 * The approval tools are the MCP caller's, never the model's: `pending_approvals` is listed over
 * MCP (`decide_approval` too where MCP_FACE_DECISIONS is on, not in this project), and neither is in
 * the model's request.
 */

const CALLER_ONLY = ["pending_approvals", "decide_approval"];
/** The caller's tools this project's deployment lists (MCP_FACE_DECISIONS is off). */
const LISTED_CALLER_ONLY = ["pending_approvals"];

const { TEST_MCP_URL, TEST_MCP_TOKEN } = env as unknown as { TEST_MCP_URL: string; TEST_MCP_TOKEN: string };

async function connect(id: string, token: string): Promise<Client> {
  const client = new Client({ name: "schema-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`http://example.com/v1/sessions/${id}/mcp`), {
    fetch: (input, init) => workerFetch(new Request(input, init)),
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

it("lists a remote MCP tool's arguments, and every tool's schema as the model's request shows it", async () => {
  const { id, token } = await createSession({
    model: "openai:fake-model",
    mcpServers: [{ name: "calc", url: TEST_MCP_URL, token: TEST_MCP_TOKEN }],
  });
  const marker = `schema-marker-${crypto.randomUUID()}`;
  await sendMessage(id, marker);
  await waitForTurnEnds(id, 1);
  const [request] = await fakeRequestsMentioning(marker);
  const seenByModel = new Map(
    (request?.body.tools ?? []).map((t) => [t.function.name, t.function.parameters]),
  );
  expect(seenByModel.has("mcp__calc__add")).toBe(true);

  const client = await connect(id, token);
  const listed = (await client.listTools()).tools;
  const add = listed.find((t) => t.name === "mcp__calc__add");
  expect(add?.inputSchema).toMatchObject({
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" } },
    required: ["a", "b"],
  });
  for (const name of CALLER_ONLY) {
    expect(listed.some((t) => t.name === name)).toBe(LISTED_CALLER_ONLY.includes(name));
    expect(seenByModel.has(name)).toBe(false);
  }
  for (const tool of listed.filter((t) => !CALLER_ONLY.includes(t.name)))
    expect(tool.inputSchema, tool.name).toEqual(seenByModel.get(tool.name));
  await client.close();
});
