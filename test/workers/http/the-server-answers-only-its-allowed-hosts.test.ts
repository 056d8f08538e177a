import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../../src/index";
import { allowedHost, hostNames } from "../../../src/http/host-check";
import { ADMIN, readResult } from "../../support/api";

/**
 * DNS rebinding against `npm start` (issue 23): a web page whose name resolves to 127.0.0.1 reached
 * the local server with its own name in `Host`. With `ALLOWED_HOSTS` set (npm start and npm run dev
 * set the loopback names), any other `Host` is refused 403 with the error envelope before routing;
 * unset or empty, every host is served (a deployment behind its own routes).
 */

const LOOPBACK = "localhost,127.0.0.1,[::1]";

function call(host: string, path: string, allowed: string | undefined, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  headers.set("host", host);
  const vars = { ...(env as unknown as Record<string, unknown>), ALLOWED_HOSTS: allowed } as unknown as Env;
  return worker
    .fetch(new Request(`http://${host}${path}`, { ...init, headers }), vars, createExecutionContext())
    .then(readResult);
}

describe("the Host check (ALLOWED_HOSTS)", () => {
  it("serves the listed loopback names on any port", async () => {
    for (const host of ["localhost:8787", "127.0.0.1:8787", "[::1]:8787", "LOCALHOST", "127.0.0.1"]) {
      const res = await call(host, "/v1/health", LOOPBACK);
      expect({ host, status: res.status }).toEqual({ host, status: 200 });
    }
  });

  it("refuses evil.example with 403 and the envelope on the API, the dashboard and a preflight", async () => {
    const answers = [
      await call("evil.example", "/v1/health", LOOPBACK),
      await call("evil.example:8787", "/v1/sessions", LOOPBACK, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: "{}",
      }),
      await call("evil.example", "/", LOOPBACK),
      await call("evil.example", "/v1/sessions", LOOPBACK, {
        method: "OPTIONS",
        headers: { origin: "https://app.example.com", "access-control-request-method": "POST" },
      }),
      await call("127.0.0.1.evil.example", "/v1/health", LOOPBACK),
    ];
    for (const res of answers) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("UNAUTHORIZED");
      expect(res.body.error.message).toMatch(/ALLOWED_HOSTS/);
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
    }
  });

  it("quotes a refused host shortened", async () => {
    const res = await call(`${"a".repeat(200)}.example`, "/v1/health", LOOPBACK);
    expect(res.status).toBe(403);
    expect(res.body.error.message.length).toBeLessThan(200);
  });

  it("serves every host when ALLOWED_HOSTS is unset or empty", async () => {
    for (const allowed of [undefined, "", " , "]) {
      const res = await call("evil.example", "/v1/health", allowed);
      expect(res.status).toBe(200);
    }
  });

  it("reads the list as host names: ports, case, spaces and a trailing dot do not matter", () => {
    const names = hostNames(" Example.com:443 , [::1]:8787,localhost. ");
    expect([...names].sort()).toEqual(["[::1]", "example.com", "localhost"]);
    expect(allowedHost("example.com.", names)).toBe(true);
    expect(allowedHost("EXAMPLE.COM:8443", names)).toBe(true);
    expect(allowedHost("[::1]", names)).toBe(true);
    expect(allowedHost("[::2]:8787", names)).toBe(false);
    expect(allowedHost("example.com.evil", names)).toBe(false);
    expect(allowedHost("", names)).toBe(false);
  });
});
