import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { api, createSession, sendMessage, workerFetch } from "../../support/api";
import { allEvents, waitForEvents } from "../../support/logs";
import { script } from "../../support/scripts";

/**
 * Sessions without a model (`"model": "external"`, docs/semantics.md §14): an outside agent drives them
 * over MCP; what reaches their inbox is recorded in the log without starting a turn.
 */

async function connect(id: string, token: string): Promise<Client> {
  const client = new Client({ name: "outside-agent", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://example.com/v1/sessions/${id}/mcp`), {
      fetch: (input, init) => workerFetch(new Request(input, init)),
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

describe("external sessions (docs/semantics.md §14)", () => {
  it("record a message in the log without a turn, and stay idle", async () => {
    const { id } = await createSession({ model: "external" });
    await sendMessage(id, "for the outside agent");
    const log = await waitForEvents(id, (es) => es.some((e) => e.type === "user/message"));
    expect(log.map((e) => e.type)).toEqual(["agent/inbox/inserted", "user/message"]);
    expect(log[1]!.data).toMatchObject({
      content: [{ type: "text", text: "for the outside agent" }],
      source: { kind: "user" },
    });
    const view = await api("GET", `/v1/sessions/${id}`);
    expect(view.body).toMatchObject({ model: "external", status: "idle" });
    await new Promise((r) => setTimeout(r, 100));
    expect((await allEvents(id)).some((e) => e.type === "turn/start")).toBe(false);
  });

  it("are driven over MCP: a child started there runs on the default model and its notice lands in the log", async () => {
    const { id, token } = await createSession({ model: "external" });
    const client = await connect(id, token);
    const started = await client.callTool({
      name: "subagent",
      arguments: {
        description: "helper",
        prompt: script({ say: "the helper's answer" }),
        run_in_background: true,
      },
    });
    const childId = /started subagent (\S+)/.exec(
      ((started.content as { text: string }[]) ?? []).map((c) => c.text).join(""),
    )?.[1];
    expect(childId).toBeDefined();
    const child = await api("GET", `/v1/sessions/${childId}`);
    expect(child.body.model).toBe("scripted");
    // the child's settlement notice reaches the external parent and is recorded, with no turn
    const log = await waitForEvents(id, (es) =>
      es.some((e) => e.type === "user/message" && e.data.source.kind === "subagent-settled"),
    );
    expect(log.some((e) => e.type === "turn/start")).toBe(false);
    const listed = await client.callTool({ name: "list_agents", arguments: {} });
    expect(JSON.stringify(listed.content)).toContain(childId);
    await client.close();
  });
});
