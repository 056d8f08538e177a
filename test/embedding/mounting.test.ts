import { describe, expect, it } from "vitest";
import { agents, call, createSession, script, testEnv, turn } from "./support";

/** The runtime mounted under a base path, next to the Worker's own routes (docs/embedding.md). */

describe("createSubagents mounts the runtime under its base path", () => {
  it("answers the API under the base path, the Worker's own routes beside it, and 404 elsewhere", async () => {
    expect((await call("GET", "/mine")).body).toBe("the Worker's own route");
    expect((await agents("GET", "/v1/health")).body).toEqual({ ok: true, version: "0.1.0" });
    for (const path of ["/v1/health", "/", "/agentsx/v1/health", "/other/agents/v1/health"]) {
      const outside = await call("GET", path);
      expect(outside.status, path).toBe(404);
      expect(outside.body).toEqual({ error: { code: "NOT_FOUND", message: "no such route" } });
    }
    const unknown = await agents("GET", "/v1/nothing-here");
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("NOT_FOUND");
  });

  it("serves the dashboard from the package at the base path, and redirects the bare base path to it", async () => {
    const bare = await call("GET", "/agents");
    expect(bare.status).toBe(308);
    expect(new URL(bare.headers.get("location")!).pathname).toBe("/agents/");
    const page = await call("GET", "/agents/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.body).toContain('<script type="module" src="app.js"></script>');
    for (const [path, type] of [
      ["/agents/app.js", "text/javascript; charset=utf-8"],
      ["/agents/css/base.css", "text/css; charset=utf-8"],
    ] as const) {
      const file = await call("GET", path);
      expect(file.status, path).toBe(200);
      expect(file.headers.get("content-type")).toBe(type);
      expect(file.headers.get("x-content-type-options")).toBe("nosniff");
    }
    // a file that is not the dashboard's, and a write, are the API's 404s
    expect((await call("GET", "/agents/src/main.ts")).status).toBe(404);
    expect((await call("POST", "/agents/")).status).toBe(404);
  });

  it("works over Durable Object bindings of the Worker's own names", async () => {
    expect(Object.keys(testEnv)).not.toContain("SESSIONS");
    const { id } = await createSession();
    const log = await turn(id, script({ say: "over AGENT_SESSIONS" }));
    expect(log.find((e) => e.type === "assistant/message")?.data.content).toEqual([
      { type: "text", text: "over AGENT_SESSIONS" },
    ]);
    const listed = await agents("GET", "/v1/sessions");
    expect(listed.body.sessions.map((s: { id: string }) => s.id)).toContain(id);
    const providers = await agents("GET", "/v1/providers");
    expect(providers.body.providers.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(["spawn", "fork"]),
    );
  });
});
