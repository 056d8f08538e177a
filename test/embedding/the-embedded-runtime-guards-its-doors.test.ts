import { createExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Answer, testEnv } from "./support";
import { type EmbeddingEnv, subagents } from "./worker";

/**
 * The doors of issue 23 as an embedding Worker meets them (its own env, its base path `/agents`):
 * an ADMIN_TOKEN shorter than 16 characters is refused with a clear error rather than accepted as
 * a guessable token; an unlisted origin's preflight is 403 outside the base path too.
 */

async function send(
  request: Request,
  vars: Partial<EmbeddingEnv> & Record<string, unknown>,
): Promise<Answer> {
  const response = await subagents.fetch(request, { ...testEnv, ...vars }, createExecutionContext());
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body };
}

function get(path: string, token: string | null, vars: Record<string, unknown>): Promise<Answer> {
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  return send(new Request(`http://example.com${path}`, { headers }), vars);
}

afterEach(() => vi.restoreAllMocks());

describe("an ADMIN_TOKEN shorter than 16 characters is refused", () => {
  it("answers every API request 500 MISCONFIGURED with a message naming the setting, logs it once, and still serves the dashboard", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const short = `short-${crypto.randomUUID().slice(0, 9)}`; // 15 characters
    expect(short).toHaveLength(15);
    const vars = { ADMIN_TOKEN: short };
    const answers = [
      await get("/agents/v1/health", null, vars),
      await get("/agents/v1/sessions", short, vars),
      await send(
        new Request("http://example.com/agents/v1/sessions", {
          method: "POST",
          headers: { authorization: `Bearer ${short}`, "content-type": "application/json" },
          body: "{}",
        }),
        vars,
      ),
      await get(
        `/agents/v1/sessions/${crypto.randomUUID()}`,
        `${crypto.randomUUID()}.${"x".repeat(40)}`,
        vars,
      ),
    ];
    for (const res of answers) {
      expect(res.status).toBe(500);
      expect(res.body.error.code).toBe("MISCONFIGURED");
      expect(res.body.error.message).toMatch(/ADMIN_TOKEN.*16 characters/);
      expect(res.body.error.message).not.toContain(short);
    }
    const page = await get("/agents/", null, vars);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const logged = errors.mock.calls.filter((args) => String(args[0]).includes("ADMIN_TOKEN"));
    expect(logged).toHaveLength(1);
    expect(String(logged[0]![0])).not.toContain(short);
  });

  it("accepts a token of exactly 16 characters, and keeps no admin when ADMIN_TOKEN is unset", async () => {
    const sixteen = `ok-${crypto.randomUUID().slice(0, 13)}`;
    expect(sixteen).toHaveLength(16);
    expect((await get("/agents/v1/sessions?limit=1", sixteen, { ADMIN_TOKEN: sixteen })).status).toBe(200);
    const unset = await get("/agents/v1/sessions?limit=1", "test-admin-token", { ADMIN_TOKEN: undefined });
    expect(unset.status).toBe(401);
    expect((await get("/agents/v1/health", null, { ADMIN_TOKEN: undefined })).status).toBe(200);
  });
});

describe("an unlisted origin's preflight is 403 outside the base path too", () => {
  for (const origins of ["", "https://app.example.com"]) {
    it(`answers 403 with CORS_ORIGINS=${JSON.stringify(origins)}`, async () => {
      for (const path of ["/elsewhere", "/agentsx/v1/health", "/agents/v1/sessions", "/agents/"]) {
        const res = await send(
          new Request(`http://example.com${path}`, {
            method: "OPTIONS",
            headers: { origin: "https://evil.example", "access-control-request-method": "GET" },
          }),
          { CORS_ORIGINS: origins },
        );
        expect({ path, status: res.status, code: res.body?.error?.code }).toEqual({
          path,
          status: 403,
          code: "UNAUTHORIZED",
        });
      }
    });
  }
});
