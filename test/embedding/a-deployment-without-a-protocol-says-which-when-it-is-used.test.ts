import { describe, expect, it } from "vitest";
import { agents, createSession } from "./support";

/**
 * The embedding Worker is made with `subagents-edge/core` and `protocols: [a2a, workersAi]`: it
 * speaks A2A and serves `workers-ai:` routes, but no MCP, no ACP and no `openai:` routes. What needs a missing protocol answers 404 (its routes) or 422
 * UNSUPPORTED_CAPABILITY (its uses), naming the protocol and how to add it, and changes nothing.
 */
describe("a deployment without a protocol says which when it is used", () => {
  const missing = (protocol: string) =>
    new RegExp(`does not speak ${protocol}: .*protocols: \\[${protocol.toLowerCase()}\\]`);

  it("has no MCP face: a session's MCP route answers 404 naming the protocol", async () => {
    const { id, token } = await createSession();
    const answer = await agents("POST", `/v1/sessions/${id}/mcp`, {
      token,
      body: { jsonrpc: "2.0", id: 1, method: "initialize", params: {} },
    });
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe("NOT_FOUND");
    expect(answer.body.error.message).toMatch(missing("MCP"));
  });

  it("refuses mcpServers on a session and on a child, creating neither", async () => {
    const mcpServers = [{ name: "calc", url: "https://mcp.example.com/mcp" }];
    const before = (await agents("GET", "/v1/sessions")).body.sessions.length;
    const refused = await agents("POST", "/v1/sessions", { body: { mcpServers } });
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(refused.body.error.code).toBe("UNSUPPORTED_CAPABILITY");
    expect(refused.body.error.message).toMatch(/^mcpServers: /);
    expect(refused.body.error.message).toMatch(missing("MCP"));
    expect((await agents("GET", "/v1/sessions")).body.sessions.length).toBe(before);

    const parent = await createSession();
    const child = await agents("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "spawn", mode: "continuable", label: "helper", prompt: "hello", mcpServers },
    });
    expect(child.status, JSON.stringify(child.body)).toBe(422);
    expect(child.body.error.code).toBe("UNSUPPORTED_CAPABILITY");
    expect(child.body.error.message).toMatch(missing("MCP"));
    expect((await agents("GET", `/v1/sessions/${parent.id}/subagents`)).body.subagents ?? []).toEqual([]);
  });

  it("refuses openai: routes, naming the protocol; workers-ai: routes say what else they lack", async () => {
    const refused = await agents("POST", "/v1/sessions", { body: { model: "openai:gpt-4o" } });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.error.code).toBe("INVALID_REQUEST");
    expect(refused.body.error.message).toMatch(
      /^model: this deployment does not speak the OpenAI-compatible API/,
    );
    expect(refused.body.error.message).toMatch(
      /protocols: \[openai\] \}\) with openai from subagents-edge\/openai/,
    );
    // its protocol is there; the Worker has no AI binding
    const unbound = await agents("POST", "/v1/sessions", { body: { model: "workers-ai:@cf/x" } });
    expect(unbound.status).toBe(400);
    expect(unbound.body.error.message).toMatch(/AI binding is not configured/);
  });

  it("refuses a start through an acp provider, and starts none; an a2a provider's start is accepted", async () => {
    const name = `acp-${crypto.randomUUID().slice(0, 8)}`;
    const put = await agents("PUT", `/v1/providers/${name}`, {
      body: { kind: "acp", url: "wss://agent.acp.test/acp" },
    });
    expect(put.status).toBe(201);
    const parent = await createSession();
    const refused = await agents("POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: name, mode: "one-shot", prompt: "hello" },
    });
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(refused.body.error.code).toBe("UNSUPPORTED_CAPABILITY");
    expect(refused.body.error.message).toMatch(missing("ACP"));
    const runs = await agents("GET", `/v1/sessions/${parent.id}/runs`);
    expect(runs.body.runs ?? []).toEqual([]);

    // the protocol it was given is there: its agent card
    const card = await agents("GET", "/.well-known/agent-card.json", { token: null });
    expect(card.status).toBe(200);
    expect(card.body.name).toEqual(expect.any(String));
  });
});
