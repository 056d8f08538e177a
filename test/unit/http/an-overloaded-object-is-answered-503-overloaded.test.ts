import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { buildRouter } from "../../../src/http/app";
import type { Deployment } from "../../../src/platform/deployment";

/**
 * The platform throws an error with `overloaded: true` when a Durable Object has too much work
 * queued. No route handles it, and the API answers it `503 OVERLOADED` (the caller retries after a
 * pause), not `500 INTERNAL`, which would read as a bug.
 */

it("answers an API request whose object is overloaded 503 OVERLOADED", async () => {
  const overloaded = {
    idFromName: (name: string) => name,
    get: () => ({
      sessions: async () => {
        throw Object.assign(new Error("Durable Object is overloaded. Too many requests queued."), {
          overloaded: true,
          remote: true,
        });
      },
    }),
  };
  const router = buildRouter({ protocols: {} } as Deployment);
  const response = await router.fetch(
    new Request("http://example.com/v1/sessions", { headers: { authorization: "Bearer test-admin-token" } }),
    { ...env, REGISTRY: overloaded } as unknown as Env,
    {} as ExecutionContext,
  );
  expect(response.status).toBe(503);
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(body.error.code).toBe("OVERLOADED");
  expect(body.error.message).toMatch(/overloaded/);
});
