import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { createSession, sendMessage } from "../../support/api";
import { fakeRequestsMentioning, toolNames } from "../../support/fake-openai";
import { ofType, waitForTurnEnds } from "../../support/logs";
import { script } from "../../support/scripts";

/**
 * A session's MCP server that refuses its token (or cannot be listed at all) is visible: the
 * session's log records it once as `mcp/server-unavailable` (the server's name and a short,
 * credential-free diagnostic), and the model is offered `mcp__<server>__unavailable`, whose
 * description and error result say why the server's tools are missing. The turn goes on.
 */

const { TEST_MCP_URL } = env as unknown as { TEST_MCP_URL: string };
const WRONG_TOKEN = "wrong-token-7d2e41";

it("logs the refusal once and answers the model's call with an error naming the server", async () => {
  const { id } = await createSession({
    mcpServers: [{ name: "badkey", url: TEST_MCP_URL, token: WRONG_TOKEN }],
  });
  await sendMessage(
    id,
    script(
      { call: [{ tool: "mcp__badkey__unavailable", args: {} }] },
      { call: [{ tool: "mcp__badkey__unavailable", args: {} }] },
      { say: "still here" },
    ),
  );
  const log = await waitForTurnEnds(id, 1);
  expect(log.at(-1)!.data).toMatchObject({ reason: "completed" });

  const logged = ofType(log, "mcp/server-unavailable");
  expect(logged).toHaveLength(1); // one failure streak, however many steps listed the tools
  expect(logged[0]!.data).toMatchObject({ server: "badkey" });
  expect(logged[0]!.data.error).toMatch(/HTTP 401/);

  const results = ofType(log, "tool/result").map((e) => e.data);
  expect(results).toHaveLength(2);
  for (const result of results) {
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toMatch(/^Error: MCP server badkey is unavailable: .*HTTP 401/);
  }
  expect(JSON.stringify(log)).not.toContain(WRONG_TOKEN);
});

it("tells the model, in the tool list, why a server's tools are missing", async () => {
  const { id } = await createSession({
    model: "openai:fake-model",
    mcpServers: [{ name: "badkey", url: TEST_MCP_URL, token: WRONG_TOKEN }],
  });
  const marker = `refused-token-${crypto.randomUUID()}`;
  await sendMessage(id, marker);
  await waitForTurnEnds(id, 1);
  const [request] = await fakeRequestsMentioning(marker);
  expect(toolNames(request!).filter((name) => name.startsWith("mcp__"))).toEqual([
    "mcp__badkey__unavailable",
  ]);
  const standIn = request!.body.tools!.find((t) => t.function.name === "mcp__badkey__unavailable")!;
  expect(standIn.function.description).toMatch(/MCP server badkey is unavailable: .*HTTP 401/);
  expect(JSON.stringify(request)).not.toContain(WRONG_TOKEN);
});
