import { describe, expect, it } from "vitest";
import { api, createSession, TENANT_ADMIN } from "../../support/api";

describe("tenancy (semantics.md §7.1)", () => {
  it("gives every session its tenant: another tenant's admin gets 404 and lists only its own", async () => {
    const mine = await createSession({ label: "default-tenant" });
    const created = await api("POST", "/v1/sessions", {
      token: TENANT_ADMIN,
      body: { label: "acme-session" },
    });
    expect(created.status).toBe(201);
    const theirs = created.body;

    expect((await api("GET", `/v1/sessions/${mine.id}`, { token: TENANT_ADMIN })).status).toBe(404);
    expect(
      (await api("POST", `/v1/sessions/${mine.id}/messages`, { token: TENANT_ADMIN, body: { content: "x" } }))
        .status,
    ).toBe(404);
    expect((await api("GET", `/v1/sessions/${theirs.id}`)).status).toBe(404);
    expect((await api("GET", `/v1/sessions/${theirs.id}`, { token: TENANT_ADMIN })).status).toBe(200);

    const acmeList = await api("GET", "/v1/sessions?limit=200", { token: TENANT_ADMIN });
    expect(acmeList.body.sessions.map((s: any) => s.id)).toEqual([theirs.id]);
    const defaultList = await api("GET", "/v1/sessions?limit=200");
    expect(defaultList.body.sessions.map((s: any) => s.id)).not.toContain(theirs.id);

    // children inherit their tenant
    const child = await api("POST", `/v1/sessions/${theirs.id}/subagents`, {
      token: TENANT_ADMIN,
      body: { provider: "spawn", prompt: "hi", mode: "one-shot" },
    });
    expect(child.status).toBe(201);
    expect((await api("GET", `/v1/sessions/${child.body.id}`, { token: TENANT_ADMIN })).status).toBe(200);
    expect((await api("GET", `/v1/sessions/${child.body.id}`)).status).toBe(404);

    // the provider registry is the deployment's: a tenant admin may read it but not change it
    expect((await api("GET", "/v1/providers", { token: TENANT_ADMIN })).status).toBe(200);
    const put = await api("PUT", "/v1/providers/acme-remote", {
      token: TENANT_ADMIN,
      body: { kind: "remote", url: "https://example.com" },
    });
    expect(put.status).toBe(403);
  });
});
