import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, createSession } from "../../support/api";
import { allEvents } from "../../support/logs";

/** HTTP conventions clients expect (semantics.md §10): Idempotency-Key as a header, and CORS. */

describe("an Idempotency-Key header works wherever a body idempotencyKey does (semantics.md §10.1, §10.2)", () => {
  it("replays a session creation keyed by the header, and refuses a header that contradicts the body", async () => {
    const key = `hdr-${crypto.randomUUID()}`;
    const headers = { "idempotency-key": key };
    const first = await api("POST", "/v1/sessions", { body: { label: "by header" }, headers });
    expect(first.status).toBe(201);
    const again = await api("POST", "/v1/sessions", { body: { label: "by header" }, headers });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    const bodyKeyed = await api("POST", "/v1/sessions", {
      body: { label: "by header", idempotencyKey: key },
    });
    expect(bodyKeyed.body.id).toBe(first.body.id);
    const contradicting = await api("POST", "/v1/sessions", {
      body: { label: "x", idempotencyKey: "other" },
      headers,
    });
    expect(contradicting.status).toBe(400);
    expect(contradicting.body.error.message).toBe(
      "the Idempotency-Key header and the body's idempotencyKey differ",
    );
    const tooLong = await api("POST", "/v1/sessions", {
      body: {},
      headers: { "idempotency-key": "k".repeat(201) },
    });
    expect(tooLong.status).toBe(400);
  });

  it("accepts a message once per header key", async () => {
    const { id } = await createSession();
    const headers = { "idempotency-key": "send-once" };
    const first = await api("POST", `/v1/sessions/${id}/messages`, { body: { content: "once" }, headers });
    const second = await api("POST", `/v1/sessions/${id}/messages`, { body: { content: "once" }, headers });
    expect(first.status).toBe(202);
    expect(second.body.messageId).toBe(first.body.messageId);
    const inserted = (await allEvents(id)).filter((e) => e.type === "agent/inbox/inserted");
    expect(inserted).toHaveLength(1);
  });
});

describe("CORS for the origins in CORS_ORIGINS, and no others", () => {
  const call = (path: string, init: RequestInit) =>
    (exports as unknown as { default: Fetcher }).default.fetch(
      new Request(`http://example.com${path}`, init),
    );

  it("answers a listed origin's preflight and marks its responses; refuses another origin's preflight", async () => {
    const preflight = await call("/v1/sessions", {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example.com",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(preflight.headers.get("access-control-allow-headers")).toContain("authorization");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");

    const answered = await call("/v1/health", { headers: { origin: "https://app.example.com" } });
    expect(answered.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(answered.headers.get("access-control-expose-headers")).toContain("retry-after");

    const stranger = await call("/v1/sessions", {
      method: "OPTIONS",
      headers: { origin: "https://evil.example.net", "access-control-request-method": "POST" },
    });
    expect(stranger.status).toBe(403);
    expect(stranger.headers.get("access-control-allow-origin")).toBeNull();
    const strangerGet = await call("/v1/health", { headers: { origin: "https://evil.example.net" } });
    expect(strangerGet.headers.get("access-control-allow-origin")).toBeNull();
  });
});
