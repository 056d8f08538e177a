import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_TENANT } from "../../../src/contract/session";
import { sha256Hex } from "../../../src/core/hash";
import { placedIdFromDigest } from "../../../src/core/placement";
import {
  api,
  type ApiResult,
  createSession,
  putProvider,
  rpc,
  rpcFailure,
  uniqueName,
} from "../../support/api";
import { dumpTables, hashOf, registryStub, stub } from "../../support/objects";

/**
 * Every URL a caller can set (provider URLs, `mcpServers[].url` on session creation and on start
 * requests, `callback.url`) breaking the outbound rule (README, Security and limits: "Outbound requests the
 * runtime makes for its callers") is `400 INVALID_REQUEST` at the route that received it, naming
 * the field, over HTTP and over the service binding (which validates with the same schemas);
 * nothing is stored (every table of every object involved hashes the same before and after) and
 * nothing is fetched (no outbound request at all leaves the Worker while they are refused).
 */

/** Each forbidden form, as an https (or plain http) URL; ACP's are the same in wss/ws. */
const FORBIDDEN: readonly (readonly [string, string])[] = [
  ["plain http to a host that is not loopback", "http://example.com/"],
  ["user information", "https://user:pass@example.com/"],
  ["user information on a loopback host", "http://user:pass@127.0.0.1:9/"],
  ["10/8", "https://10.0.0.1/"],
  ["172.16/12", "https://172.31.255.255/"],
  ["192.168/16", "https://192.168.1.1/"],
  ["100.64/10 (shared)", "https://100.64.0.1/"],
  ["169.254/16 (metadata)", "https://169.254.169.254/latest/meta-data/"],
  ["0.0.0.0/8 over https", "https://0.0.0.0:8443/"],
  ["0.0.0.0 over plain http", "http://0.0.0.0:8787/"],
  ["fc00::/7", "https://[fd00:ec2::254]/"],
  ["fe80::/10", "https://[fe80::1]/"],
  [":: (unspecified)", "https://[::]/"],
  ["IPv4-mapped, dotted", "https://[::ffff:10.0.0.1]/"],
  ["IPv4-mapped, hex", "https://[::ffff:a9fe:a9fe]/"],
  ["decimal IPv4", "https://167772161/"],
  ["hex IPv4", "https://0xa9fea9fe/"],
  ["octal IPv4", "https://012.0.0.1/"],
  ["a metadata host name", "https://metadata.google.internal/computeMetadata/v1/"],
  ["the bare metadata name", "https://metadata/"],
];

const asWebSocket = (url: string) => url.replace(/^http(s?):/, "ws$1:");
const SECRET = "a-callback-secret-of-enough-length";

// ---------------------------------------------------------------- no request leaves the Worker

const outbound: string[] = [];
const real = globalThis.fetch;
beforeAll(() => {
  globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    outbound.push(input instanceof Request ? input.url : String(input));
    return real(input, init);
  }) as typeof fetch;
});
afterAll(() => {
  globalThis.fetch = real;
});

// ---------------------------------------------------------------- the surfaces

interface Surface {
  name: string;
  /** The field's path in the issue. */
  path: string;
  /** Sends `url` where this surface takes it. */
  send(url: string, parent: string): Promise<ApiResult>;
  /** The objects whose tables must not change besides the registry (a refused create's id: none). */
  objects(url: string, parent: string): Promise<string[]>;
  scheme?: "ws";
}

/** The id a create with this idempotency key would make (the key is derived from the URL). */
async function createdId(key: string): Promise<string> {
  return placedIdFromDigest(await sha256Hex(`${DEFAULT_TENANT}\n${key}`));
}
const keyOf = (url: string) => `outbound-${url}`;

const SURFACES: Surface[] = [
  ...(["remote", "a2a", "acp"] as const).map(
    (kind): Surface => ({
      name: `PUT /v1/providers/:name (${kind}) url`,
      path: "url",
      send: (url) => putProvider(uniqueName(kind), { kind, url, token: "provider-token" }),
      objects: async () => [],
      ...(kind === "acp" ? { scheme: "ws" as const } : {}),
    }),
  ),
  {
    name: "POST /v1/sessions mcpServers[].url",
    path: "mcpServers.0.url",
    send: async (url) =>
      api("POST", "/v1/sessions", {
        body: {
          mcpServers: [{ name: "calc", url, token: "mcp-token" }],
          idempotencyKey: keyOf(`mcp ${url}`),
        },
      }),
    objects: async (url) => [await createdId(keyOf(`mcp ${url}`))],
  },
  {
    name: "POST /v1/sessions callback.url",
    path: "callback.url",
    send: async (url) =>
      api("POST", "/v1/sessions", {
        body: { callback: { url, secret: SECRET }, idempotencyKey: keyOf(`callback ${url}`) },
      }),
    objects: async (url) => [await createdId(keyOf(`callback ${url}`))],
  },
  {
    name: "POST /v1/sessions/:id/subagents (one-shot) mcpServers[].url",
    path: "mcpServers.0.url",
    send: (url, parent) =>
      api("POST", `/v1/sessions/${parent}/subagents`, {
        body: { provider: "spawn", mode: "one-shot", prompt: "hi", mcpServers: [{ name: "calc", url }] },
      }),
    objects: async (_url, parent) => [parent],
  },
  {
    name: "POST /v1/sessions/:id/subagents (continuable) mcpServers[].url",
    path: "mcpServers.0.url",
    send: (url, parent) =>
      api("POST", `/v1/sessions/${parent}/subagents`, {
        body: {
          provider: "spawn",
          mode: "continuable",
          label: "c",
          prompt: "hi",
          mcpServers: [{ name: "calc", url }],
        },
      }),
    objects: async (_url, parent) => [parent],
  },
];

async function stateOf(ids: readonly string[]): Promise<string> {
  return hashOf(await Promise.all([registryStub(), ...ids.map((id) => stub(id))].map(dumpTables)));
}

let parent: string;
beforeAll(async () => {
  parent = (await createSession()).id;
});

describe("a caller-set URL that breaks the outbound rule is 400 INVALID_REQUEST where it arrives", () => {
  for (const surface of SURFACES) {
    it(`${surface.name}: every forbidden form, nothing stored, nothing fetched`, async () => {
      for (const [form, https] of FORBIDDEN) {
        const url = surface.scheme === "ws" ? asWebSocket(https) : https;
        const ids = await surface.objects(url, parent);
        const before = await stateOf(ids);
        const sent = outbound.length;
        const res = await surface.send(url, parent);
        expect({ form, status: res.status, code: res.body?.error?.code }).toEqual({
          form,
          status: 400,
          code: "INVALID_REQUEST",
        });
        const issues: { path: string[]; message: string }[] = res.body.error.issues;
        expect(
          issues.some((i) => i.path.join(".") === surface.path && /^must /.test(i.message)),
          `${form}: ${JSON.stringify(issues)}`,
        ).toBe(true);
        expect(await stateOf(ids), form).toBe(before);
        expect(outbound.slice(sent), form).toEqual([]);
      }
    });
  }

  it("a provider refused for its URL is not listed afterwards", async () => {
    const name = uniqueName("bad");
    expect((await putProvider(name, { kind: "a2a", url: "https://[::ffff:a9fe:a9fe]/" })).status).toBe(400);
    const listed = (await api("GET", "/v1/providers")).body.providers as { name: string }[];
    expect(listed.map((p) => p.name)).not.toContain(name);
  });
});

describe("the service binding refuses the same URLs with the same schemas", () => {
  const CALLS: [string, string, (url: string) => Promise<unknown>, (url: string) => Promise<string[]>][] = [
    [
      "createSession mcpServers",
      "mcpServers.0.url",
      (url) =>
        rpc.createSession({ mcpServers: [{ name: "calc", url }], idempotencyKey: keyOf(`rpc mcp ${url}`) }),
      async (url) => [await createdId(keyOf(`rpc mcp ${url}`))],
    ],
    [
      "createSession callback",
      "callback.url",
      (url) =>
        rpc.createSession({
          callback: { url, secret: SECRET },
          idempotencyKey: keyOf(`rpc callback ${url}`),
        }),
      async (url) => [await createdId(keyOf(`rpc callback ${url}`))],
    ],
    [
      "start mcpServers",
      "mcpServers.0.url",
      (url) => rpc.start(parent, { provider: "spawn", prompt: "hi", mcpServers: [{ name: "calc", url }] }),
      async () => [parent],
    ],
    [
      "startContinuable mcpServers",
      "mcpServers.0.url",
      (url) =>
        rpc.startContinuable(parent, {
          provider: "spawn",
          prompt: "hi",
          label: "c",
          mcpServers: [{ name: "calc", url }],
        }),
      async () => [parent],
    ],
  ];
  for (const [name, path, call, objects] of CALLS) {
    it(`${name}: every forbidden form is INVALID_REQUEST naming ${path}, nothing stored or fetched`, async () => {
      for (const [form, url] of FORBIDDEN) {
        const ids = await objects(url);
        const before = await stateOf(ids);
        const sent = outbound.length;
        const message = await rpcFailure(() => call(url));
        expect(message, form).toMatch(new RegExp(`^INVALID_REQUEST: ${path.replace(/\./g, "\\.")}: must `));
        expect(await stateOf(ids), form).toBe(before);
        expect(outbound.slice(sent), form).toEqual([]);
      }
    });
  }
});
