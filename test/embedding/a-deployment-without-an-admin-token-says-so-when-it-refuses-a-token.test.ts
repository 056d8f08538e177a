import { createExecutionContext } from "cloudflare:test";
import { expect, it } from "vitest";
import { type Answer, testEnv } from "./support";
import { subagents } from "./worker";

/**
 * A Worker with no ADMIN_TOKEN still refuses every token that is not a valid session or tenant
 * token (`401 UNAUTHENTICATED`), but says why an admin token cannot work: the deployment has no
 * ADMIN_TOKEN, and how to set one. With ADMIN_TOKEN set, every wrong token gets the one uniform
 * answer, "the token is not valid", whatever it is and whatever exists.
 */

async function get(path: string, token: string, vars: Record<string, unknown>): Promise<Answer> {
  const request = new Request(`http://example.com${path}`, { headers: { authorization: `Bearer ${token}` } });
  const response = await subagents.fetch(request, { ...testEnv, ...vars }, createExecutionContext());
  return { status: response.status, headers: response.headers, body: await response.json() };
}

const sessionShaped = () => `${crypto.randomUUID()}.${"x".repeat(40)}`;

it("refuses tokens 401 saying the deployment has no ADMIN_TOKEN and how to set it", async () => {
  const unset = { ADMIN_TOKEN: undefined };
  const refusals = [
    await get("/agents/v1/sessions?limit=1", "test-admin-token", unset),
    await get("/agents/v1/sessions?limit=1", "some-long-random-token-value", unset),
    await get(`/agents/v1/sessions/${crypto.randomUUID()}`, sessionShaped(), unset),
  ];
  for (const refusal of refusals) {
    expect(refusal.status).toBe(401);
    expect(refusal.body.error.code).toBe("UNAUTHENTICATED");
    expect(refusal.body.error.message).toMatch(/this deployment has no ADMIN_TOKEN/);
    expect(refusal.body.error.message).toMatch(/wrangler secret put ADMIN_TOKEN/);
  }
  // and the same for an empty one
  const empty = await get("/agents/v1/sessions?limit=1", "test-admin-token", { ADMIN_TOKEN: "" });
  expect(empty.body.error.message).toMatch(/this deployment has no ADMIN_TOKEN/);
});

it("answers every wrong token the same when ADMIN_TOKEN is set", async () => {
  const set = { ADMIN_TOKEN: "test-admin-token" };
  const refusals = [
    await get("/agents/v1/sessions?limit=1", "not-the-admin-token-at-all", set),
    await get(`/agents/v1/sessions/${crypto.randomUUID()}`, sessionShaped(), set),
  ];
  for (const refusal of refusals)
    expect({ status: refusal.status, error: refusal.body.error }).toEqual({
      status: 401,
      error: { code: "UNAUTHENTICATED", message: "the token is not valid" },
    });
});
