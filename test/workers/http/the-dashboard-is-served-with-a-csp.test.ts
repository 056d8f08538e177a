import { describe, expect, it } from "vitest";
import { api } from "../../support/api";

/**
 * The dashboard's responses carry a tight Content-Security-Policy (its own scripts and styles
 * only, no framing) and the usual hardening headers (issue 23: no CSP, no frame-ancestors). The
 * browser test (test/e2e/dashboard-csp.test.mjs) checks the page runs under it without a violation.
 */

function directives(csp: string | null): Map<string, string> {
  return new Map(
    (csp ?? "")
      .split(";")
      .map((d) => d.trim())
      .filter(Boolean)
      .map((d) => {
        const [name, ...values] = d.split(/\s+/);
        return [name!, values.join(" ")] as [string, string];
      }),
  );
}

describe("the dashboard's security headers", () => {
  for (const path of ["/", "/app.js", "/css/base.css"]) {
    it(`serves ${path} with the CSP, X-Frame-Options, Referrer-Policy and nosniff`, async () => {
      const res = await api("GET", path, { token: null, headers: { host: "127.0.0.1:8787" } });
      expect(res.status).toBe(200);
      const csp = directives(res.headers.get("content-security-policy"));
      expect(csp.get("default-src")).toBe("'self'");
      expect(csp.get("script-src")).toBe("'self'");
      expect(csp.get("style-src")).toBe("'self'");
      expect(csp.get("frame-ancestors")).toBe("'none'");
      expect(csp.get("base-uri")).toBe("'none'");
      expect(csp.get("form-action")).toBe("'self'");
      expect(csp.get("object-src")).toBe("'none'");
      // the event stream's WebSocket goes to this origin only
      expect(csp.get("connect-src")).toBe("'self' ws://127.0.0.1:8787 wss://127.0.0.1:8787");
      for (const value of csp.values()) expect(value).not.toMatch(/unsafe-eval|\*|https?:/);
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    });
  }

  it("names no other host in connect-src when Host is not a plain host name", async () => {
    const res = await api("GET", "/", { token: null, headers: { host: "a;script-src *" } });
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(directives(csp).get("connect-src")).toBe("'self'");
    expect(directives(csp).get("script-src")).toBe("'self'");
  });

  it("keeps the API's responses free of the dashboard's CSP", async () => {
    const res = await api("GET", "/v1/health", { token: null });
    expect(res.headers.get("content-security-policy")).toBeNull();
  });
});
