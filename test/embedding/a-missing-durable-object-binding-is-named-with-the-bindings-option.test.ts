import { createExecutionContext } from "cloudflare:test";
import { expect, it } from "vitest";
import { createSubagents } from "../../src/worker";
import { ADMIN, testEnv } from "./support";

/**
 * A Worker whose wrangler.toml binds the runtime's Durable Object classes under names the runtime
 * was not told (`createSubagents` without `bindings`, or with a misspelt one) cannot know it when
 * its module loads (there is no env yet). Its first API request answers `500 MISCONFIGURED`,
 * naming the missing binding, the `bindings` option that names it, and the Durable Object
 * bindings the env does have; nothing else is touched.
 */

async function firstRequest(subagents: ReturnType<typeof createSubagents>) {
  const request = new Request("http://example.com/v1/sessions?limit=1", {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  const response = await subagents.fetch(request, testEnv, createExecutionContext());
  return {
    status: response.status,
    body: (await response.json()) as { error: { code: string; message: string } },
  };
}

it("names the missing binding, the bindings option and the env's own Durable Object bindings", async () => {
  // the suite's Worker binds AGENT_SESSIONS and AGENT_REGISTRY; this runtime was told neither
  const answer = await firstRequest(createSubagents());
  expect(answer.status).toBe(500);
  expect(answer.body.error.code).toBe("MISCONFIGURED");
  const message = answer.body.error.message;
  expect(message).toContain('the Durable Object binding "SESSIONS"');
  expect(message).toContain('createSubagents({ bindings: { sessions: "<your binding>" } })');
  expect(message).toContain("AGENT_SESSIONS, AGENT_REGISTRY");
});

it("names the registry binding when only it is wrong", async () => {
  const answer = await firstRequest(
    createSubagents({ bindings: { sessions: "AGENT_SESSIONS", registry: "AGENT_REGISTY" } }),
  );
  expect(answer.body.error.code).toBe("MISCONFIGURED");
  expect(answer.body.error.message).toContain('the Durable Object binding "AGENT_REGISTY"');
  expect(answer.body.error.message).toContain(
    'createSubagents({ bindings: { registry: "<your binding>" } })',
  );
});
