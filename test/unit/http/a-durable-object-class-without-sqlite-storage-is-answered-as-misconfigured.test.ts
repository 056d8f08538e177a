import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { buildRouter } from "../../../src/http/app";
import { unhandledFailure } from "../../../src/http/unhandled";
import type { Deployment } from "../../../src/platform/deployment";

/**
 * A Worker whose wrangler.toml created the runtime's Durable Object classes with `new_classes`
 * (key-value storage) instead of `new_sqlite_classes` fails at the first SQL statement of an
 * object, with workerd's error (its words below, as a caller of the object receives them). The
 * API answers that `500 MISCONFIGURED` with a message naming the missing migration, instead of an
 * opaque `500 INTERNAL`; any other unexpected error stays `500 INTERNAL "internal error"`.
 */

const WORKERD_NO_SQL =
  "SQL is not enabled for this Durable Object class. To enable it, change `new_classes` to `new_sqlite_classes` within the 'migrations' field in your wrangler.jsonc or wrangler.toml file. If using workerd directly,set `enableSql = true` in your workerd config for the class. Note that this change cannot be made after the class is already deployed to production.";

it("decides MISCONFIGURED, naming new_sqlite_classes, from the object's storage error; INTERNAL otherwise", () => {
  const decided = unhandledFailure(Object.assign(new Error(WORKERD_NO_SQL), { remote: true }));
  expect(decided.code).toBe("MISCONFIGURED");
  expect(decided.message).toMatch(/new_sqlite_classes/);
  expect(decided.message).toMatch(/wrangler\.toml/);
  expect(unhandledFailure(new Error("something else broke"))).toEqual({
    ok: false,
    code: "INTERNAL",
    message: "internal error",
  });
  expect(unhandledFailure("not even an Error")).toMatchObject({ code: "INTERNAL" });
});

it("answers an API request that reached such an object 500 MISCONFIGURED", async () => {
  // a registry namespace whose object fails as a key-value-backed one does at its first SQL
  const failing = {
    idFromName: (name: string) => name,
    get: () => ({
      sessions: async () => {
        throw Object.assign(new Error(WORKERD_NO_SQL), { remote: true });
      },
    }),
  };
  const router = buildRouter({ protocols: {} } as Deployment);
  const response = await router.fetch(
    new Request("http://example.com/v1/sessions", { headers: { authorization: "Bearer test-admin-token" } }),
    { ...env, REGISTRY: failing } as unknown as Env,
    {} as ExecutionContext,
  );
  expect(response.status).toBe(500);
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(body.error.code).toBe("MISCONFIGURED");
  expect(body.error.message).toMatch(/new_sqlite_classes/);
});
