import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MAX_REDIRECTS, OutboundRefused, outboundFetch } from "../../../src/platform/outbound-fetch";

/**
 * The one fetch for caller-set URLs (README, Security and limits: "Outbound requests the runtime makes for its
 * callers"): the URL rule before any request, redirects never left to the platform, a redirect
 * followed only on the same origin (a bounded number of times, as the fetch standard would
 * rewrite it), any other refused with no request to its target. The network here is a recorder.
 */

interface Seen {
  url: string;
  method: string;
  redirect: string;
  authorization: string | null;
  contentType: string | null;
  body: string;
}

type Answer = (seen: Seen) => Response;

let seen: Seen[];
let routes: Map<string, Answer>;
const real = globalThis.fetch;

beforeEach(() => {
  seen = [];
  routes = new Map();
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const record: Seen = {
      url: request.url,
      method: request.method,
      redirect: init?.redirect ?? request.redirect,
      authorization: request.headers.get("authorization"),
      contentType: request.headers.get("content-type"),
      body: request.body === null ? "" : await request.text(),
    };
    seen.push(record);
    const answer = routes.get(request.url);
    return answer ? answer(record) : new Response("not found", { status: 404 });
  }) as typeof fetch;
});
afterEach(() => {
  globalThis.fetch = real;
});

const redirect =
  (status: number, location: string): Answer =>
  () =>
    new Response(null, { status, headers: { location } });
const ok =
  (text = "ok"): Answer =>
  () =>
    new Response(text, { status: 200 });

const POST = {
  method: "POST",
  headers: { authorization: "Bearer secret-token", "content-type": "application/json" },
  body: '{"x":1}',
};

describe("outboundFetch: redirects", () => {
  it("never lets the platform follow a redirect: every request goes out with redirect: manual", async () => {
    routes.set("https://a.example/x", ok());
    await outboundFetch("https://a.example/x", { redirect: "follow" });
    expect(seen.map((s) => s.redirect)).toEqual(["manual"]);
  });

  for (const status of [301, 302, 303, 307, 308]) {
    it(`a ${status} to another origin is refused, and nothing is sent there`, async () => {
      routes.set("https://a.example/x", redirect(status, "https://b.example/landed"));
      routes.set("https://b.example/landed", ok("landed"));
      const failure = await outboundFetch("https://a.example/x", POST).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(OutboundRefused);
      expect(String((failure as Error).message)).toBe(
        `redirected (HTTP ${status}) to another origin (https://b.example): not followed`,
      );
      expect(seen.map((s) => s.url)).toEqual(["https://a.example/x"]);
    });
  }

  it("another origin is another scheme or port too, and a relative Location is resolved first", async () => {
    for (const [from, location, origin] of [
      ["https://a.example/x", "http://a.example/y", "http://a.example"],
      ["https://a.example/x", "https://a.example:8443/y", "https://a.example:8443"],
      ["http://127.0.0.1:9000/x", "//127.0.0.1:9001/y", "http://127.0.0.1:9001"],
    ] as const) {
      routes.set(from, redirect(302, location));
      await expect(outboundFetch(from)).rejects.toThrow(`to another origin (${origin}): not followed`);
    }
    expect(seen.map((s) => s.url)).toEqual([
      "https://a.example/x",
      "https://a.example/x",
      "http://127.0.0.1:9000/x",
    ]);
  });

  it("a 307 or 308 on the same origin is followed with the same method, headers and body", async () => {
    routes.set("https://a.example/x", redirect(307, "/y"));
    routes.set("https://a.example/y", redirect(308, "https://a.example/z?q=1"));
    routes.set("https://a.example/z?q=1", ok("there"));
    const response = await outboundFetch("https://a.example/x", POST);
    expect(await response.text()).toBe("there");
    expect(
      seen.map(({ url, method, authorization, body }) => ({ url, method, authorization, body })),
    ).toEqual(
      ["https://a.example/x", "https://a.example/y", "https://a.example/z?q=1"].map((url) => ({
        url,
        method: "POST",
        authorization: "Bearer secret-token",
        body: '{"x":1}',
      })),
    );
  });

  it("a 303, and a 301 or 302 after a POST, become a GET without a body (the fetch standard's rewrite)", async () => {
    for (const status of [301, 302, 303]) {
      seen = [];
      routes.set("https://a.example/x", redirect(status, "/y"));
      routes.set("https://a.example/y", ok());
      await outboundFetch("https://a.example/x", POST);
      expect(seen[1]).toMatchObject({
        url: "https://a.example/y",
        method: "GET",
        body: "",
        contentType: null,
      });
      expect(seen[1]!.authorization).toBe("Bearer secret-token");
    }
  });

  it(`follows at most ${MAX_REDIRECTS} redirects on the same origin`, async () => {
    for (let i = 0; i <= MAX_REDIRECTS + 1; i++)
      routes.set(`https://a.example/${i}`, redirect(302, `/${i + 1}`));
    await expect(outboundFetch("https://a.example/0")).rejects.toThrow(
      `more than ${MAX_REDIRECTS} redirects: not followed`,
    );
    expect(seen).toHaveLength(MAX_REDIRECTS + 1);
    seen = [];
    routes.set(`https://a.example/${MAX_REDIRECTS}`, ok("last"));
    expect(await (await outboundFetch("https://a.example/0")).text()).toBe("last");
    expect(seen).toHaveLength(MAX_REDIRECTS + 1);
  });

  it("a 30x without a Location, or a 304, is an answer like any other", async () => {
    routes.set("https://a.example/x", () => new Response("moved?", { status: 302 }));
    routes.set("https://a.example/y", () => new Response(null, { status: 304 }));
    expect((await outboundFetch("https://a.example/x")).status).toBe(302);
    expect((await outboundFetch("https://a.example/y")).status).toBe(304);
  });
});

describe("outboundFetch: the URL rule, and a fixed origin", () => {
  it.each([
    "https://10.0.0.1/x",
    "https://[::ffff:a9fe:a9fe]/",
    "https://u:p@a.example/",
    "http://a.example/",
    "https://metadata.google.internal/",
  ])("a URL that breaks the rule is refused before any request: %s", async (url) => {
    const failure = await outboundFetch(url).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OutboundRefused);
    expect((failure as Error).message).toMatch(/^the URL must .+: not sent$/);
    expect(seen).toEqual([]);
  });

  it("with an origin, a request to any other origin is refused before it is sent", async () => {
    routes.set("https://a.example/rpc", ok());
    const origin = "https://a.example";
    expect((await outboundFetch("https://a.example/rpc", POST, { origin })).status).toBe(200);
    await expect(outboundFetch("https://b.example/rpc", POST, { origin })).rejects.toThrow(
      "the URL is on another origin (https://b.example): not sent",
    );
    await expect(outboundFetch(new URL("http://0.0.0.0:9/rpc"), POST, { origin })).rejects.toThrow(
      OutboundRefused,
    );
    expect(seen.map((s) => s.url)).toEqual(["https://a.example/rpc"]);
  });

  it("takes a Request, a URL or a string, and keeps the caller's signal", async () => {
    routes.set("https://a.example/r", ok());
    await outboundFetch(new Request("https://a.example/r", POST));
    await outboundFetch(new URL("https://a.example/r"));
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    await expect(outboundFetch("https://a.example/r", { signal: controller.signal })).rejects.toThrow();
    expect(seen.map((s) => [s.method, s.body])).toEqual([
      ["POST", '{"x":1}'],
      ["GET", ""],
    ]);
  });
});
