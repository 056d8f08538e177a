import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../../src/index";
import { readResult } from "../../support/api";

/**
 * An unlisted origin's CORS preflight is documented `403` (api.md); issue 23 saw `404` where no
 * origin is listed (the default, and `npm start`). Paths outside a base path are covered by the
 * embedding suite (test/embedding/the-embedded-runtime-guards-its-doors.test.ts).
 */

function preflight(path: string, origins: string, origin = "https://evil.example") {
  const vars = { ...(env as unknown as Record<string, unknown>), CORS_ORIGINS: origins } as unknown as Env;
  const request = new Request(`http://example.com${path}`, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization",
    },
  });
  return worker.fetch(request, vars, createExecutionContext()).then(readResult);
}

const PATHS = [
  "/v1/sessions",
  `/v1/sessions/${crypto.randomUUID()}/messages`,
  "/v1/nowhere",
  "/",
  "/app.js",
  "/x",
];

describe("unlisted preflights are refused 403 on every path", () => {
  for (const [name, origins] of [
    ["no origin is listed", ""],
    ["other origins are listed", "https://app.example.com"],
  ] as const) {
    it(`answers 403 with the envelope and no CORS headers when ${name}`, async () => {
      for (const path of PATHS) {
        const res = await preflight(path, origins);
        expect({ path, status: res.status, code: res.body?.error?.code }).toEqual({
          path,
          status: 403,
          code: "UNAUTHORIZED",
        });
        expect(res.headers.get("access-control-allow-origin")).toBeNull();
      }
    });
  }

  it("still answers a listed origin's preflight with 204", async () => {
    const res = await preflight("/v1/sessions", "https://app.example.com", "https://app.example.com");
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
  });
});
