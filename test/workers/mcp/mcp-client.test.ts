import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, createSession, sendMessage, startRun, waitForRun } from "../../support/api";
import { allEvents, waitForTurnEnds } from "../../support/logs";
import { dumpTables } from "../../support/objects";
import { script } from "../../support/scripts";

/**
 * A session's MCP servers (docs/semantics.md §15): the tools of a real MCP server (the SDK's
 * server side, over HTTP in Node: test/setup/mcp-server.ts) appear to the model as
 * `mcp__<name>__<tool>`, under the tool filter, inherited by children; failures are error tool
 * results; the server's token is in no view, event, listing or answer.
 */

const { TEST_MCP_URL: URL_, TEST_MCP_TOKEN: TOKEN } = env as unknown as {
  TEST_MCP_URL: string;
  TEST_MCP_TOKEN: string;
};
const server = (extra: Record<string, unknown> = {}) => ({ name: "calc", url: URL_, token: TOKEN, ...extra });

function results(events: { type: string; data: any }[]): { name: string; text: string; isError: boolean }[] {
  return events
    .filter((e) => e.type === "tool/result")
    .map((e) => ({
      name: e.data.name,
      text: e.data.content.map((b: { text: string }) => b.text).join(""),
      isError: e.data.isError,
    }));
}

describe("a session's MCP servers give its model tools (docs/semantics.md §15)", () => {
  it("calls a server's tools as mcp__<server>__<tool> and reads their answers and errors", async () => {
    const { id } = await createSession({ mcpServers: [server()] });
    await sendMessage(
      id,
      script(
        { call: [{ tool: "mcp__calc__add", args: { a: 2, b: 40 } }] },
        {
          call: [
            { tool: "mcp__calc__fails", args: {} },
            { tool: "mcp__calc__explode", args: {} },
          ],
        },
        { call: [{ tool: "mcp__calc__add", args: { a: "two" } }] },
        { say: "done" },
      ),
    );
    const log = await waitForTurnEnds(id, 1);
    const answered = results(log);
    expect(answered[0]).toEqual({ name: "mcp__calc__add", text: "42", isError: false });
    expect(answered[1]).toEqual({
      name: "mcp__calc__fails",
      text: "Error: the tool failed on purpose",
      isError: true,
    });
    expect(answered[2]!.isError).toBe(true);
    expect(answered[2]!.text).toMatch(/boom inside the MCP tool/);
    expect(answered[3]!.isError).toBe(true); // the server refused the arguments
    expect(log.at(-1)!.data).toMatchObject({ reason: "completed" });
  });

  it("shows the server's tools to the model with their schemas, under the tool filter", async () => {
    const { id } = await createSession({
      model: "openai:fake-model",
      mcpServers: [server()],
      toolFilter: { deny: ["mcp__calc__explode"] },
    });
    const marker = `list tools ${crypto.randomUUID()}`;
    await sendMessage(id, marker);
    await waitForTurnEnds(id, 1);
    const { fakeRequestsMentioning, toolNames } = await import("../../support/fake-openai");
    const [request] = await fakeRequestsMentioning(marker);
    const names = toolNames(request!);
    expect(names).toEqual(expect.arrayContaining(["mcp__calc__add", "mcp__calc__shout", "mcp__calc__fails"]));
    expect(names).not.toContain("mcp__calc__explode");
    const add = request!.body.tools!.find((t) => t.function.name === "mcp__calc__add")!;
    expect(add.function.description).toBe("Adds two numbers.");
    expect(add.function.parameters).toMatchObject({
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
    });
  });

  it("gives children the parent's servers unless their start names their own", async () => {
    const { id } = await createSession({ mcpServers: [server()] });
    const inherited = await startRun(id, {
      prompt: script(
        { call: [{ tool: "mcp__calc__shout", args: { text: "from the child" } }] },
        { say: "ok" },
      ),
    });
    expect(inherited.status).toBe(201);
    await waitForRun(id, inherited.body.runId);
    expect(results(await allEvents(inherited.body.id))[0]).toEqual({
      name: "mcp__calc__shout",
      text: "FROM THE CHILD",
      isError: false,
    });
    const own = await startRun(id, {
      prompt: script({ call: [{ tool: "mcp__calc__shout", args: { text: "x" } }] }, { say: "ok" }),
      mcpServers: [server({ name: "other" })],
    });
    await waitForRun(id, own.body.runId);
    const [ownResult] = results(await allEvents(own.body.id));
    expect(ownResult).toEqual({
      name: "mcp__calc__shout",
      text: 'Error: unknown tool "mcp__calc__shout"',
      isError: true,
    });
  });

  it("turns an unreachable server or a refused token into error results; the turn goes on", async () => {
    const { id } = await createSession({
      mcpServers: [
        { name: "down", url: "http://127.0.0.1:9/mcp" },
        server({ name: "badkey", token: "not-the-token" }),
      ],
    });
    await sendMessage(
      id,
      script(
        {
          call: [
            { tool: "mcp__down__add", args: { a: 1, b: 1 } },
            { tool: "mcp__badkey__add", args: { a: 1, b: 1 } },
          ],
        },
        { say: "still here" },
      ),
    );
    const log = await waitForTurnEnds(id, 1);
    expect(results(log).map((r) => r.isError)).toEqual([true, true]);
    expect(log.at(-1)!.data).toMatchObject({ reason: "completed" });
  });

  it("never shows the token: not in the view, the log, the listings or the stored events", async () => {
    const { id } = await createSession({ mcpServers: [server({ name: "secret" })] });
    const view = await api("GET", `/v1/sessions/${id}`);
    expect(view.body.mcpServers).toEqual([{ name: "secret", url: URL_ }]);
    await sendMessage(
      id,
      script({ call: [{ tool: "mcp__secret__add", args: { a: 1, b: 2 } }] }, { say: "ok" }),
    );
    await waitForTurnEnds(id, 1);
    const child = await startRun(id, { prompt: "hello" });
    await waitForRun(id, child.body.runId);
    const everything = JSON.stringify([
      view.body,
      await allEvents(id),
      await allEvents(child.body.id),
      (await api("GET", `/v1/sessions/${id}/children`)).body,
      (await api("GET", `/v1/sessions/${id}/descendants`)).body,
      (await api("GET", `/v1/sessions/${child.body.id}`)).body,
    ]);
    expect(everything).toContain("secret");
    expect(everything).not.toContain(TOKEN);
    // it lives only in storage no reader reaches: the session's header (to call the server) and
    // the child's start spec in its runs table (to retry the start)
    const tables = await dumpTables(id);
    const holding = Object.entries(tables)
      .filter(([, rows]) => JSON.stringify(rows).includes(TOKEN))
      .map(([name]) => name)
      .sort();
    expect(holding).toEqual(["header", "runs"]);
  });

  it("refuses bad server specs and stores nothing", async () => {
    for (const mcpServers of [
      [{ name: "Bad Name", url: URL_ }],
      [{ name: "plain", url: "http://example.com/mcp" }],
      [
        { name: "dup", url: URL_ },
        { name: "dup", url: URL_ },
      ],
      [{ name: "x", url: URL_, extra: true }],
      Array.from({ length: 9 }, (_, i) => ({ name: `s${i}`, url: URL_ })),
    ]) {
      const res = await api("POST", "/v1/sessions", { body: { mcpServers } });
      expect(res.status, JSON.stringify(mcpServers)).toBe(400);
    }
  });
});
