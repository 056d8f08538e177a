import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import {
  api,
  createSession,
  expectError,
  putProvider,
  rpc,
  rpcFailure,
  startRun,
  TENANT_ADMIN,
  uniqueName,
  waitForRun,
  workerFetch,
} from "../../support/api";
import { allEvents, eventually, ofType, toolResults } from "../../support/logs";
import { tablesHash } from "../../support/objects";
import { script } from "../../support/scripts";

/**
 * Providers belong to tenants (README, Security and limits: "Providers and tenants"): a provider registered for the
 * deployment's own tenant is no provider at all to another tenant's sessions, over every face; a
 * session's `providers` list holds on every start, not only for its model's tools; and only the
 * deployment admin sees where a provider lives. Written as the attack that found it: an `acme`
 * session created with `providers: ["spawn"]` started a run through the deployment's ACP provider.
 */

/** A session of tenant `acme`, created by its tenant admin. */
async function acmeSession(body: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
  const created = await api("POST", "/v1/sessions", { token: TENANT_ADMIN, body });
  expect(created.status).toBe(201);
  return created.body;
}

/** The tool names a session's MCP face offers, through the official SDK's client. */
async function mcpTools(id: string, token: string): Promise<string[]> {
  const client = new Client({ name: "tenancy-test", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://example.com/v1/sessions/${id}/mcp`), {
      fetch: (input, init) => workerFetch(new Request(input, init)),
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  try {
    return (await client.listTools()).tools.map((t) => t.name);
  } finally {
    await client.close();
  }
}

async function listedNames(token: string): Promise<string[]> {
  const res = await api("GET", "/v1/providers", { token });
  expect(res.status).toBe(200);
  return res.body.providers.map((p: { name: string }) => p.name);
}

describe("providers belong to the tenants they were registered for", () => {
  it("a deployment provider is NO_PROVIDER to another tenant's session over HTTP, MCP and the model's tool, and changes nothing", async () => {
    const acp = uniqueName("deploy-acp");
    expect(
      (await putProvider(acp, { kind: "acp", url: "ws://127.0.0.1:9", token: "bridge-secret" })).status,
    ).toBe(201);
    const mine = await createSession();
    const theirs = await acmeSession({ providers: ["spawn"], toolFilter: { deny: ["subagent"] } });

    // HTTP, with the tenant's admin token and with the session's own token
    const before = await tablesHash(theirs.id);
    for (const token of [TENANT_ADMIN, theirs.token]) {
      expectError(await startRun(theirs.id, { provider: acp, prompt: "x" }, token), 404, "NO_PROVIDER");
      expectError(
        await api("POST", `/v1/sessions/${theirs.id}/subagents`, {
          token,
          body: { provider: acp, prompt: "x", label: "c", mode: "continuable" },
        }),
        404,
        "NO_PROVIDER",
      );
    }
    expect(await tablesHash(theirs.id)).toBe(before);

    // the same start from the deployment's own tenant passes the provider check (its run is refused
    // later, by the unreachable agent, not by the start)
    expect((await startRun(mine.id, { provider: acp, prompt: "x" })).status).toBe(201);

    // MCP: no tool for it; the deployment's own sessions have one
    const unscoped = await acmeSession();
    expect(await mcpTools(unscoped.id, unscoped.token)).not.toContain(`subagent_${acp}`);
    expect(await mcpTools(mine.id, mine.token)).toContain(`subagent_${acp}`);

    // the model's tool: not offered, so a call to it is an error result and starts nothing
    await api("POST", `/v1/sessions/${unscoped.id}/messages`, {
      token: unscoped.token,
      body: {
        content: script({ call: [{ tool: `subagent_${acp}`, args: { description: "d", prompt: "p" } }] }),
      },
    });
    const log = await eventually(
      () => allEvents(unscoped.id, unscoped.token),
      (events) => ofType(events, "turn/end").length === 1,
    );
    expect(toolResults(log).map((r) => r.isError)).toEqual([true]);
    expect(ofType(log, "subagent/start")).toEqual([]);
  });

  it("a provider registered for one tenant serves that tenant's sessions and nobody else's, over HTTP and RPC", async () => {
    const name = uniqueName("acme-only");
    const put = await putProvider(name, { kind: "spawn", tenants: ["acme"] });
    expect(put.status).toBe(201);
    expect(put.body.tenants).toEqual(["acme"]);

    const theirs = await acmeSession();
    const started = await startRun(theirs.id, { provider: name, prompt: "for acme" }, TENANT_ADMIN);
    expect(started.status).toBe(201);
    const run = await api("GET", `/v1/sessions/${theirs.id}/runs/${started.body.runId}?wait=10000`, {
      token: TENANT_ADMIN,
    });
    expect(run.body.result.output).toEqual([{ type: "text", text: "echo: for acme" }]);

    const mine = await createSession();
    const before = await tablesHash(mine.id);
    expectError(await startRun(mine.id, { provider: name, prompt: "x" }), 404, "NO_PROVIDER");
    // RPC (the deployment's service binding) acts for the deployment's tenant: the same refusal
    expect(await rpcFailure(() => rpc.start(mine.id, { provider: name, prompt: "x" }))).toMatch(
      /^NO_PROVIDER/,
    );
    expect(await tablesHash(mine.id)).toBe(before);
    expect(await listedNames(TENANT_ADMIN)).toContain(name);
    expect(await listedNames(theirs.token)).toContain(name);
    expect(await listedNames(mine.token)).not.toContain(name);

    // ["*"]: every tenant
    const shared = uniqueName("shared");
    expect((await putProvider(shared, { kind: "fork", tenants: ["*"] })).status).toBe(201);
    expect(await listedNames(theirs.token)).toContain(shared);
    expect(await listedNames(mine.token)).toContain(shared);
    const forMe = await startRun(mine.id, { provider: shared, prompt: "shared" });
    expect(forMe.status).toBe(201);
    expect((await waitForRun(mine.id, forMe.body.runId)).result.stopReason).toBe("completed");
  });

  it("a session's providers list holds on every start and in its token's listing", async () => {
    const { id, token } = await createSession({ providers: ["spawn"] });
    const before = await tablesHash(id);
    expectError(await startRun(id, { provider: "fork", prompt: "x" }, token), 404, "NO_PROVIDER");
    expectError(await startRun(id, { provider: "fork", prompt: "x" }), 404, "NO_PROVIDER");
    expect(await rpcFailure(() => rpc.start(id, { provider: "fork", prompt: "x" }))).toMatch(/^NO_PROVIDER/);
    expect(await tablesHash(id)).toBe(before);
    expect(await listedNames(token)).toEqual(["spawn"]);
    expect(await mcpTools(id, token)).not.toContain("subagent_fork");
    // the listed one still starts
    expect((await startRun(id, { provider: "spawn", prompt: "ok" }, token)).status).toBe(201);
  });

  it("shows a provider's address and tenants to the deployment admin only, in the listing and the registry's log", async () => {
    const name = uniqueName("where");
    const url = "https://agents.example.com/a2a";
    expect((await putProvider(name, { kind: "a2a", url, token: "t0ken-value", tenants: ["*"] })).status).toBe(
      201,
    );
    const session = await createSession();
    for (const token of [TENANT_ADMIN, session.token]) {
      const listed = await api("GET", "/v1/providers", { token });
      const entry = listed.body.providers.find((p: { name: string }) => p.name === name);
      expect(entry).toEqual(expect.objectContaining({ name, kind: "a2a", local: false }));
      expect(entry.url).toBeUndefined();
      expect(entry.tenants).toBeUndefined();
      const events = await api("GET", "/v1/providers/events?limit=500", { token });
      expect(events.status).toBe(200);
      const text = JSON.stringify(events.body);
      expect(text).toContain(name);
      expect(text).not.toContain("example.com");
      expect(text).not.toContain('"tenants"');
    }
    // a provider the tenant may not use is absent from its log too
    const hidden = uniqueName("hidden");
    expect((await putProvider(hidden, { kind: "spawn" })).status).toBe(201);
    const acmeLog = await api("GET", "/v1/providers/events?limit=500", { token: TENANT_ADMIN });
    expect(JSON.stringify(acmeLog.body)).not.toContain(hidden);
    // the deployment admin sees both, with their addresses
    const all = (await api("GET", "/v1/providers")).body.providers;
    expect(all.find((p: { name: string }) => p.name === name)).toEqual(
      expect.objectContaining({ url, tenants: ["*"] }),
    );
    expect(JSON.stringify(all)).not.toContain("t0ken-value");
  });

  it("refuses a tenants list that names nobody, mixes * with names, repeats or misspells a tenant, and registers nothing", async () => {
    for (const tenants of [[], ["*", "acme"], ["acme", "acme"], ["Acme"], "acme", [""]]) {
      const name = uniqueName("bad-tenants");
      expectError(await putProvider(name, { kind: "spawn", tenants }), 400, "INVALID_REQUEST");
      expect(await listedNames("test-admin-token")).not.toContain(name);
    }
    // a tenant admin may not register one for itself
    expect(
      (await putProvider(uniqueName("mine"), { kind: "spawn", tenants: ["acme"] }, TENANT_ADMIN)).status,
    ).toBe(403);
  });

  // last in this file: it removes and restores the built-in spawn provider
  it("a built-in name registered again for another kind belongs to the deployment's tenant, not to every tenant", async () => {
    expect((await api("DELETE", "/v1/providers/spawn")).status).toBe(204);
    try {
      expect((await putProvider("spawn", { kind: "acp", url: "ws://127.0.0.1:9" })).status).toBe(201);
      const theirs = await acmeSession();
      expect(await listedNames(theirs.token)).not.toContain("spawn");
      expectError(
        await startRun(theirs.id, { provider: "spawn", prompt: "x" }, theirs.token),
        404,
        "NO_PROVIDER",
      );
    } finally {
      await api("DELETE", "/v1/providers/spawn");
      expect((await putProvider("spawn", { kind: "spawn" })).status).toBe(201);
    }
    // the built-in again: every tenant's
    const theirs = await acmeSession();
    expect(await listedNames(theirs.token)).toContain("spawn");
  });
});
