import { api, type ApiResult, type CallOptions, rawBody, TENANT_ADMIN } from "../api";

/**
 * The catalogue of bad inputs to the delegation, provider-registry and directory routes and to the
 * service-binding entrypoint, for test/workers/http/bad-inputs/delegation-routes.test.ts: every
 * case names the route, the input and the documented code(s) it must be refused with; the test
 * sends it and checks the answer and that nothing changed.
 */

/** A well-formed UUID no session is ever created under: unknown child, run and session id. */
export const GHOST = "00000000-0000-4000-8000-00000000dead";
export const REMOTE = "remote-docs";
/** A well-formed UUID that names jurisdiction `eu` (version 8, next digit 1: core/placement.ts). */
const EU_ID = "00000000-0000-8100-8000-0000000000e0";
export interface Session {
  id: string;
  token: string;
}

/** The sessions every case runs against (`a` is replaced by a fresh session for isolated cases). */
export interface World {
  /** A top-level session with a history and one settled one-shot child. */
  a: Session;
  /** An unrelated top-level session. */
  b: Session;
  /** `a`'s one-shot child. */
  child: string;
  /** The `childId` `a`'s start reserved for `child` (a reserved id names a child under `a` only). */
  reserved: string;
  /** `a`'s settled run (of `child`). */
  runId: string;
}

export interface HttpCase {
  route: string;
  name: string;
  /** The documented code, or the codes any reasonable fix may answer with (all of one status). */
  code: string | readonly string[];
  run(w: World): Promise<ApiResult>;
  /** Runs against a fresh parent in place of `a`: a probe that, if wrongly accepted, must not pollute `a`. */
  isolated?: boolean;
  /** A known runtime bug makes this case fail today (kept as `it.fails`). */
  bug?: string;
}

export interface RpcCase {
  method: string;
  name: string;
  code: string;
  run(rpc: Rpc, w: World): Promise<unknown>;
  bug?: string;
}

/** The entrypoint, reached untyped as another Worker's service binding would be. */
export type Rpc = any;

// ---------------------------------------------------------------- request builders

export const P = {
  providers: "/v1/providers",
  provider: (name: string) => `/v1/providers/${name}`,
  providerEvents: (q: string) => `/v1/providers/events${q}`,
  sessions: (q = "") => `/v1/sessions${q}`,
  subagents: (id: string) => `/v1/sessions/${id}/subagents`,
  drain: (id: string) => `/v1/sessions/${id}/subagents/drain`,
  followup: (id: string, child: string) => `/v1/sessions/${id}/subagents/${child}/messages`,
  interrupt: (id: string, child: string) => `/v1/sessions/${id}/subagents/${child}/interrupt`,
  run: (id: string, runId: string, q = "") => `/v1/sessions/${id}/runs/${runId}${q}`,
  children: (id: string) => `/v1/sessions/${id}/children`,
  descendants: (id: string) => `/v1/sessions/${id}/descendants`,
  outbox: (id: string) => `/v1/sessions/${id}/outbox`,
};

/** The session's own id with a secret that was never minted. */
const wrongSecret = (s: Session): string => `${s.id}.wrong-secret-wrong-secret`;
/** A syntactically valid session token for a session that does not exist. */
const FORGED = `${GHOST}.forged-secret-forged-secret`;

export const ONE_SHOT = { provider: "spawn", prompt: "hi", mode: "one-shot" } as const;
const CONTINUABLE = { provider: "spawn", prompt: "hi", mode: "continuable", label: "helper" } as const;

const sub = (body: unknown, token?: string): ((w: World) => Promise<ApiResult>) => {
  return (w) => api("POST", P.subagents(w.a.id), token === undefined ? { body } : { body, token });
};
const createWith = (body: unknown): (() => Promise<ApiResult>) => {
  return () => api("POST", P.sessions(), { body });
};
/** A one-shot start whose last member is given as raw JSON text (for numbers and depths JSON.stringify cannot say). */
const subRaw = (member: string): ((w: World) => Promise<ApiResult>) => {
  return (w) =>
    api(
      "POST",
      P.subagents(w.a.id),
      rawBody(`{"provider":"spawn","prompt":"hi","mode":"one-shot",${member}}`),
    );
};
const putCase = (name: string, body: unknown, token?: string): (() => Promise<ApiResult>) => {
  return () => api("PUT", P.provider(name), token === undefined ? { body } : { body, token });
};
const drainCase = (w: World, body: unknown, token?: string): Promise<ApiResult> =>
  api("POST", P.drain(w.a.id), token === undefined ? { body } : { body, token });

/** UTF-8 text with raw bytes in between (invalid sequences included). */
function bytes(before: string, middle: number[], after: string): Uint8Array {
  const encoder = new TextEncoder();
  return new Uint8Array([...encoder.encode(before), ...middle, ...encoder.encode(after)]);
}

function nested(depth: number, open = "[", close = "]"): string {
  return `${open.repeat(depth)}${close.repeat(depth)}`;
}

function deepObjectSchema(levels: number): Record<string, unknown> {
  let node: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < levels; i++) node = { type: "object", properties: { x: node } };
  return node;
}

// ---------------------------------------------------------------- the catalogue (HTTP)

type Code = string | readonly string[];
type Row = [name: string, code: Code, run: (w: World) => Promise<ApiResult>, extra?: Extra];
type Extra = { isolated?: true; bug?: string };

/** One route's cases; the expected status is the code's documented status. */
function cases(route: string, rows: Row[]): HttpCase[] {
  return rows.map(([name, code, run, extra]) => ({ route, name, code, run, ...extra }));
}

const ISOLATED: Extra = { isolated: true };

const registry: HttpCase[] = [
  ...cases("GET /v1/providers", [
    ["no token", "UNAUTHENTICATED", () => api("GET", P.providers, { token: null })],
    ["a wrong token", "UNAUTHENTICATED", () => api("GET", P.providers, { token: "not-the-admin-token" })],
    [
      "a Basic authorization header",
      "UNAUTHENTICATED",
      () => api("GET", P.providers, { token: null, headers: { authorization: "Basic dGVzdDp0ZXN0" } }),
    ],
    [
      "a forged session token (well-formed, of a session that does not exist)",
      "UNAUTHENTICATED",
      () => api("GET", P.providers, { token: FORGED }),
      {},
    ],
  ]),
  ...cases("GET /v1/providers/events", [
    ["after=-2", "INVALID_REQUEST", () => api("GET", P.providerEvents("?after=-2"))],
    ["after=abc", "INVALID_REQUEST", () => api("GET", P.providerEvents("?after=abc"))],
    ["limit=0", "INVALID_REQUEST", () => api("GET", P.providerEvents("?limit=0"))],
    ["limit=501", "INVALID_REQUEST", () => api("GET", P.providerEvents("?limit=501"))],
    ["limit=2.5", "INVALID_REQUEST", () => api("GET", P.providerEvents("?limit=2.5"))],
    ["an unknown query parameter", "INVALID_REQUEST", () => api("GET", P.providerEvents("?after=0&kind=x"))],
    ["no token", "UNAUTHENTICATED", () => api("GET", P.providerEvents(""), { token: null })],
    [
      "a forged session token",
      "UNAUTHENTICATED",
      () => api("GET", P.providerEvents(""), { token: FORGED }),
      {},
    ],
  ]),
  ...cases("PUT /v1/providers/:name", [
    ["an upper-case name", "INVALID_REQUEST", putCase("Remote", { kind: "spawn" })],
    ["a name starting with a digit", "INVALID_REQUEST", putCase("1remote", { kind: "spawn" })],
    ["a name of 65 characters", "INVALID_REQUEST", putCase(`r${"x".repeat(64)}`, { kind: "spawn" })],
    ["a name with an encoded space", "INVALID_REQUEST", putCase("re%20mote", { kind: "spawn" })],
    ["a name with a non-ASCII letter", "INVALID_REQUEST", putCase("r%C3%A9mote", { kind: "spawn" })],
    ["a name with an encoded path traversal", "INVALID_REQUEST", putCase("..%2Fsessions", { kind: "spawn" })],
    ["an unknown kind", "INVALID_REQUEST", putCase("lambda-one", { kind: "lambda" })],
    ["no kind", "INVALID_REQUEST", putCase("kindless", { url: "https://example.com/agents" })],
    ["an empty body", "INVALID_REQUEST", () => api("PUT", P.provider("empty-body"))],
    ["kind as an array", "INVALID_REQUEST", putCase("kind-array", { kind: ["remote"], url: "https://x.io" })],
    ["a remote provider without a url", "INVALID_REQUEST", putCase("remote-nourl", { kind: "remote" })],
    ["an ftp url", "INVALID_REQUEST", putCase("remote-ftp", { kind: "remote", url: "ftp://example.com/a" })],
    ["a url that is not a url", "INVALID_REQUEST", putCase("remote-text", { kind: "remote", url: "a b c" })],
    ["a javascript: url", "INVALID_REQUEST", putCase("remote-js", { kind: "remote", url: "javascript:x()" })],
    [
      "a url over 2048 characters",
      "INVALID_REQUEST",
      putCase("remote-long", { kind: "remote", url: `https://example.com/${"a".repeat(2048)}` }),
    ],
    [
      "a url on a spawn provider (extra field)",
      "INVALID_REQUEST",
      putCase("spawn-url", { kind: "spawn", url: "https://example.com" }),
    ],
    [
      "an unknown field on a remote provider",
      "INVALID_REQUEST",
      putCase("remote-extra", { kind: "remote", url: "https://example.com", timeoutMs: 5000 }),
    ],
    [
      "an empty token",
      "INVALID_REQUEST",
      putCase("remote-notoken", { kind: "remote", url: "https://example.com", token: "" }),
    ],
    [
      "a numeric token",
      "INVALID_REQUEST",
      putCase("remote-numtoken", { kind: "remote", url: "https://example.com", token: 42 }),
    ],
    [
      "malformed JSON",
      "MALFORMED_JSON",
      () => api("PUT", P.provider("broken-json"), rawBody('{"kind": "spawn"')),
    ],
    [
      "a JSON body sent as text/plain",
      "INVALID_REQUEST",
      () =>
        api("PUT", P.provider("plain"), {
          raw: '{"kind":"spawn"}',
          headers: { "content-type": "text/plain" },
        }),
    ],
    [
      "a body over 256 KiB",
      "PAYLOAD_TOO_LARGE",
      () =>
        api("PUT", P.provider("too-large"), {
          body: { kind: "remote", url: "https://x.io", token: "t".repeat(262_144) },
        }),
    ],
    [
      "a session token",
      "UNAUTHORIZED",
      (w) => api("PUT", P.provider("by-session"), { token: w.a.token, body: { kind: "spawn" } }),
    ],
    ["a tenant admin token", "UNAUTHORIZED", putCase("by-tenant", { kind: "spawn" }, TENANT_ADMIN)],
    [
      "no token",
      "UNAUTHENTICATED",
      () => api("PUT", P.provider("anonymous"), { token: null, body: { kind: "spawn" } }),
    ],
    ["a built-in name that is taken (spawn)", "DUPLICATE_PROVIDER", putCase("spawn", { kind: "spawn" })],
    [
      "a registered remote name with another url",
      "DUPLICATE_PROVIDER",
      putCase(REMOTE, { kind: "remote", url: "https://other.example.com" }),
    ],
  ]),
  ...cases("DELETE /v1/providers/:name", [
    ["an unknown name", "NO_PROVIDER", () => api("DELETE", P.provider("never-registered"))],
    ["a name that is not a provider name", "NO_PROVIDER", () => api("DELETE", P.provider("NOT%20A%20NAME"))],
    ["a session token", "UNAUTHORIZED", (w) => api("DELETE", P.provider("spawn"), { token: w.a.token })],
    [
      "a tenant admin token",
      "UNAUTHORIZED",
      () => api("DELETE", P.provider(REMOTE), { token: TENANT_ADMIN }),
    ],
    ["no token", "UNAUTHENTICATED", () => api("DELETE", P.provider("fork"), { token: null })],
  ]),
];

const list = (query: string, token?: string | null) => () =>
  api("GET", P.sessions(query), token === undefined ? {} : { token });

const directory: HttpCase[] = [
  ...cases("GET /v1/sessions", [
    ["a session token", "UNAUTHORIZED", (w) => list("", w.a.token)()],
    ["no token", "UNAUTHENTICATED", list("", null)],
    ["limit=0", "INVALID_REQUEST", list("?limit=0")],
    ["limit=201", "INVALID_REQUEST", list("?limit=201")],
    ["limit=ten", "INVALID_REQUEST", list("?limit=ten")],
    ["limit=-5", "INVALID_REQUEST", list("?limit=-5")],
    ["a cursor that is not a cursor", "INVALID_REQUEST", list("?cursor=xyz")],
    ["a cursor under 3 characters", "INVALID_REQUEST", list("?cursor=12")],
    ["a cursor whose id is not a UUID", "INVALID_REQUEST", list("?cursor=1700000000000.not-a-uuid")],
    ["a cursor whose time is not a number", "INVALID_REQUEST", list(`?cursor=yesterday.${GHOST}`)],
    ["a cursor over 100 characters", "INVALID_REQUEST", list(`?cursor=${"9".repeat(64)}.${GHOST}`)],
    ["an unknown query parameter", "INVALID_REQUEST", list("?limit=5&order=asc")],
  ]),
  ...cases("POST /v1/sessions", [
    ["an unknown model route", "INVALID_REQUEST", createWith({ model: "gpt-4" })],
    ["an openai: route with no model name", "INVALID_REQUEST", createWith({ model: "openai:" })],
    [
      "a workers-ai route with no AI binding configured",
      "INVALID_REQUEST",
      createWith({ model: "workers-ai:@cf/meta/llama-3-8b-instruct" }),
    ],
    ["an empty model", "INVALID_REQUEST", createWith({ model: "" })],
    ["a model over 200 characters", "INVALID_REQUEST", createWith({ model: `openai:${"m".repeat(200)}` })],
    ["a numeric model", "INVALID_REQUEST", createWith({ model: 4 })],
    ["an empty toolFilter", "INVALID_REQUEST", createWith({ toolFilter: {} })],
    ["toolFilter.allow as a string", "INVALID_REQUEST", createWith({ toolFilter: { allow: "subagent" } })],
    [
      "a toolFilter with an unknown key",
      "INVALID_REQUEST",
      createWith({ toolFilter: { deny: ["x"], mode: 1 } }),
    ],
    ["a toolFilter naming an empty tool", "INVALID_REQUEST", createWith({ toolFilter: { allow: [""] } })],
    [
      "a toolFilter denying 257 tools",
      "INVALID_REQUEST",
      createWith({ toolFilter: { deny: Array.from({ length: 257 }, (_, i) => `tool${i}`) } }),
    ],
    ["an unknown field", "INVALID_REQUEST", createWith({ label: "x", priority: "high" })],
    ["a temperature over 2", "INVALID_REQUEST", createWith({ temperature: 2.5 })],
    ["a temperature as a string", "INVALID_REQUEST", createWith({ temperature: "0.5" })],
    ["a maxOutputTokens of 0", "INVALID_REQUEST", createWith({ maxOutputTokens: 0 })],
    ["a fractional maxOutputTokens", "INVALID_REQUEST", createWith({ maxOutputTokens: 10.5 })],
    [
      "a __proto__ key",
      "INVALID_REQUEST",
      () => api("POST", P.sessions(), rawBody('{"__proto__":{"label":"p"}}')),
    ],
    ["an empty label", "INVALID_REQUEST", createWith({ label: "" })],
    ["a label over 200 characters", "INVALID_REQUEST", createWith({ label: "l".repeat(201) })],
    ["a persona over 32,768 characters", "INVALID_REQUEST", createWith({ persona: "p".repeat(32_769) })],
    ["a persona as an array", "INVALID_REQUEST", createWith({ persona: ["be brief"] })],
    ["providers as a string", "INVALID_REQUEST", createWith({ providers: "spawn" })],
    [
      "33 providers",
      "INVALID_REQUEST",
      createWith({ providers: Array.from({ length: 33 }, (_, i) => `p${i}`) }),
    ],
    ["an unknown backgroundMode", "INVALID_REQUEST", createWith({ backgroundMode: "sometimes" })],
    ["an unknown reportDelivery", "INVALID_REQUEST", createWith({ reportDelivery: "loud" })],
    ["reportDelivery null", "INVALID_REQUEST", createWith({ reportDelivery: null })],
    ["a JSON array body", "INVALID_REQUEST", createWith([{ label: "x" }])],
    ["truncated JSON", "MALFORMED_JSON", () => api("POST", P.sessions(), rawBody('{"label": "trunc'))],
    [
      "invalid UTF-8 bytes inside a string",
      "MALFORMED_JSON",
      () => api("POST", P.sessions(), rawBody(bytes('{"label":"bad', [0xff, 0xfe], '"}'))),
      {},
    ],
  ]),
];

const delegation: HttpCase[] = [
  ...cases("POST /v1/sessions/:id/subagents", [
    // the body
    ["no provider", "INVALID_REQUEST", sub({ prompt: "hi", mode: "one-shot" })],
    ["no prompt", "INVALID_REQUEST", sub({ provider: "spawn", mode: "one-shot" })],
    ["no mode", "INVALID_REQUEST", sub({ provider: "spawn", prompt: "hi" })],
    ["an unknown mode", "INVALID_REQUEST", sub({ ...ONE_SHOT, mode: "background" })],
    ["an empty provider", "INVALID_REQUEST", sub({ ...ONE_SHOT, provider: "" })],
    ["a numeric prompt", "INVALID_REQUEST", sub({ ...ONE_SHOT, prompt: 7 })],
    ["a label over 200 characters", "INVALID_REQUEST", sub({ ...ONE_SHOT, label: "l".repeat(201) })],
    ["an unknown field", "INVALID_REQUEST", sub({ ...ONE_SHOT, priority: "high" })],
    ["a negative temperature", "INVALID_REQUEST", sub({ ...ONE_SHOT, temperature: -0.1 })],
    ["a maxOutputTokens over a million", "INVALID_REQUEST", sub({ ...ONE_SHOT, maxOutputTokens: 1_000_001 })],
    ["a deadlineSeconds of 0", "INVALID_REQUEST", sub({ ...ONE_SHOT, deadlineSeconds: 0 })],
    ["a deadlineSeconds over a week", "INVALID_REQUEST", sub({ ...CONTINUABLE, deadlineSeconds: 604_801 })],
    ["a fractional deadlineSeconds", "INVALID_REQUEST", sub({ ...ONE_SHOT, deadlineSeconds: 1.5 })],
    ["an empty body", "INVALID_REQUEST", (w) => api("POST", P.subagents(w.a.id))],
    [
      "malformed JSON",
      "MALFORMED_JSON",
      (w) => api("POST", P.subagents(w.a.id), rawBody('{"provider":"spawn",')),
    ],
    ["an unknown provider (one-shot)", "NO_PROVIDER", sub({ ...ONE_SHOT, provider: "nope" })],
    ["an unknown provider (continuable)", "NO_PROVIDER", sub({ ...CONTINUABLE, provider: "nope" })],
    [
      "a persona for a remote provider",
      "UNSUPPORTED_CAPABILITY",
      sub({ ...ONE_SHOT, provider: REMOTE, persona: "a pirate" }),
    ],
    [
      "a childId for a remote provider (it mints its own run id)",
      "INVALID_REQUEST",
      sub({ ...ONE_SHOT, provider: REMOTE, childId: GHOST }),
    ],
    [
      "an outputSchema for a remote provider",
      "UNSUPPORTED_CAPABILITY",
      sub({ ...ONE_SHOT, provider: REMOTE, outputSchema: { type: "object" } }),
    ],
    ["a continuable remote child", "UNSUPPORTED_CAPABILITY", sub({ ...CONTINUABLE, provider: REMOTE })],
    ["an unknown model route", "INVALID_REQUEST", sub({ ...ONE_SHOT, model: "gpt-4" })],
    [
      "a toolFilter naming unknown tools",
      "INVALID_REQUEST",
      sub({ ...ONE_SHOT, toolFilter: { allow: ["rm_rf"] } }),
    ],
    ["an empty toolFilter", "INVALID_REQUEST", sub({ ...CONTINUABLE, toolFilter: {} })],
    // childId
    ["a childId that is not a UUID", "INVALID_REQUEST", sub({ ...ONE_SHOT, childId: "my-child" })],
    ["an empty childId", "INVALID_REQUEST", sub({ ...ONE_SHOT, childId: "" })],
    [
      "a continuable childId that is not a UUID",
      "INVALID_REQUEST",
      sub({ ...CONTINUABLE, childId: "../other" }),
    ],
    [
      "the childId of an existing child",
      "DUPLICATE_CHILD",
      (w) => sub({ ...ONE_SHOT, childId: w.reserved })(w),
    ],
    [
      "the childId of an existing one-shot child, on a continuable start",
      "DUPLICATE_CHILD",
      (w) => sub({ ...CONTINUABLE, childId: w.reserved })(w),
    ],
    [
      "a childId naming a jurisdiction the child is not placed in",
      "INVALID_REQUEST",
      sub({ ...ONE_SHOT, childId: EU_ID }),
      ISOLATED,
    ],
    // continuable specifics
    [
      "a continuable child without a label",
      "INVALID_REQUEST",
      sub({ provider: "spawn", prompt: "hi", mode: "continuable" }),
    ],
    [
      "a continuable child with an outputSchema",
      "INVALID_REQUEST",
      sub({ ...CONTINUABLE, outputSchema: { type: "object" } }),
    ],
    // maxDepth forms
    ["maxDepth as a string", "INVALID_MAX_DEPTH", sub({ ...ONE_SHOT, maxDepth: "2" })],
    ["maxDepth -1", "INVALID_MAX_DEPTH", sub({ ...ONE_SHOT, maxDepth: -1 })],
    ["maxDepth 1.5", "INVALID_MAX_DEPTH", sub({ ...ONE_SHOT, maxDepth: 1.5 })],
    ["maxDepth null", "INVALID_MAX_DEPTH", sub({ ...ONE_SHOT, maxDepth: null })],
    ["maxDepth 1e300", "INVALID_MAX_DEPTH", subRaw('"maxDepth":1e300')],
    ["maxDepth -0", "INVALID_MAX_DEPTH", subRaw('"maxDepth":-0'), ISOLATED],
    ["maxDepth true on a continuable child", "INVALID_MAX_DEPTH", sub({ ...CONTINUABLE, maxDepth: true })],
    [
      "maxDepth as an array of 10,000 levels",
      ["INVALID_REQUEST", "INVALID_MAX_DEPTH"],
      subRaw(`"maxDepth":${nested(10_000)}`),
      { isolated: true },
    ],
    ["maxDepth 0 (no child allowed)", "DEPTH_EXCEEDED", sub({ ...ONE_SHOT, maxDepth: 0 })],
    // outputSchema
    [
      "an outputSchema that is not an object schema",
      "INVALID_SCHEMA",
      sub({ ...ONE_SHOT, outputSchema: { type: "string" } }),
    ],
    [
      "an outputSchema with $ref",
      "INVALID_SCHEMA",
      sub({ ...ONE_SHOT, outputSchema: { type: "object", $ref: "#/x" } }),
    ],
    ["an outputSchema as a string", "INVALID_SCHEMA", sub({ ...ONE_SHOT, outputSchema: "object" })],
    ["an outputSchema null", "INVALID_SCHEMA", sub({ ...ONE_SHOT, outputSchema: null })],
    [
      "an outputSchema with an unknown property type",
      "INVALID_SCHEMA",
      sub({ ...ONE_SHOT, outputSchema: { type: "object", properties: { at: { type: "date" } } } }),
    ],
    [
      "an outputSchema nested 40 levels",
      "INVALID_SCHEMA",
      sub({ ...ONE_SHOT, outputSchema: deepObjectSchema(40) }),
    ],
    [
      "an outputSchema of 100,000 nested arrays",
      ["INVALID_REQUEST", "INVALID_SCHEMA"],
      subRaw(`"outputSchema":${nested(100_000)}`),
      { isolated: true },
    ],
    [
      "an outputSchema whose default nests 10,000 objects",
      ["INVALID_REQUEST", "INVALID_SCHEMA"],
      subRaw(
        `"outputSchema":{"type":"object","default":${nested(10_000, '{"a":', "}").replace('{"a":}', "{}")}}`,
      ),
      { isolated: true },
    ],
    [
      "invalid UTF-8 bytes inside the prompt",
      "MALFORMED_JSON",
      (w) =>
        api(
          "POST",
          P.subagents(w.a.id),
          rawBody(bytes('{"provider":"spawn","mode":"one-shot","prompt":"', [0xc3, 0x28], '"}')),
        ),
      { isolated: true },
    ],
    // who and where
    ["another session's token", "NOT_FOUND", (w) => sub(ONE_SHOT, w.b.token)(w)],
    ["the session's id with a wrong secret", "UNAUTHENTICATED", (w) => sub(ONE_SHOT, wrongSecret(w.a))(w)],
    [
      "the parent's token acting as its child",
      "UNAUTHORIZED",
      (w) => api("POST", P.subagents(w.child), { token: w.a.token, body: ONE_SHOT }),
    ],
    [
      "a session id that is not a UUID",
      "NOT_FOUND",
      () => api("POST", P.subagents("not-a-uuid"), { body: ONE_SHOT }),
    ],
    ["a session that does not exist", "NOT_FOUND", () => api("POST", P.subagents(GHOST), { body: ONE_SHOT })],
    [
      "a tenant admin on a default-tenant session",
      "NOT_FOUND",
      (w) => api("POST", P.subagents(w.a.id), { token: TENANT_ADMIN, body: ONE_SHOT }),
    ],
  ]),
  ...cases("GET /v1/sessions/:id/runs/:runId", [
    ["an unknown run", "NOT_FOUND", (w) => api("GET", P.run(w.a.id, GHOST))],
    [
      "an unknown run with a short wait",
      "NOT_FOUND",
      (w) => api("GET", P.run(w.a.id, "no-such-run", "?wait=50")),
    ],
    ["wait=-1", "INVALID_REQUEST", (w) => api("GET", P.run(w.a.id, w.runId, "?wait=-1"))],
    ["wait=30001", "INVALID_REQUEST", (w) => api("GET", P.run(w.a.id, w.runId, "?wait=30001"))],
    ["wait=soon", "INVALID_REQUEST", (w) => api("GET", P.run(w.a.id, w.runId, "?wait=soon"))],
    ["wait=1.5", "INVALID_REQUEST", (w) => api("GET", P.run(w.a.id, w.runId, "?wait=1.5"))],
    ["wait=1e3", "INVALID_REQUEST", (w) => api("GET", P.run(w.a.id, w.runId, "?wait=1e3"))],
    ["wait empty", "INVALID_REQUEST", (w) => api("GET", P.run(w.a.id, w.runId, "?wait="))],
    ["wait of seven digits", "INVALID_REQUEST", (w) => api("GET", P.run(w.a.id, w.runId, "?wait=0000001"))],
    [
      "an unknown query parameter",
      "INVALID_REQUEST",
      (w) => api("GET", P.run(w.a.id, w.runId, "?wait=0&follow=1")),
    ],
    ["a run of another session", "NOT_FOUND", (w) => api("GET", P.run(w.b.id, w.runId))],
    ["another session's token", "NOT_FOUND", (w) => api("GET", P.run(w.a.id, w.runId), { token: w.b.token })],
    ["no token", "UNAUTHENTICATED", (w) => api("GET", P.run(w.a.id, w.runId), { token: null })],
    ["a session id that is not a UUID", "NOT_FOUND", (w) => api("GET", P.run("not-a-uuid", w.runId))],
  ]),
  ...cases("DELETE /v1/sessions/:id/runs/:runId", [
    ["an unknown run", "NOT_FOUND", (w) => api("DELETE", P.run(w.a.id, GHOST))],
    ["a run of another session", "NOT_FOUND", (w) => api("DELETE", P.run(w.b.id, w.runId))],
    [
      "another session's token",
      "NOT_FOUND",
      (w) => api("DELETE", P.run(w.a.id, w.runId), { token: w.b.token }),
    ],
    [
      "the parent's token acting as its child",
      "UNAUTHORIZED",
      (w) => api("DELETE", P.run(w.child, GHOST), { token: w.a.token }),
    ],
    [
      "the session's id with a wrong secret",
      "UNAUTHENTICATED",
      (w) => api("DELETE", P.run(w.a.id, w.runId), { token: wrongSecret(w.a) }),
    ],
  ]),
];

const followupCase = (w: World, child: string, options: CallOptions) =>
  api("POST", P.followup(w.a.id, child), options);
const MORE = { body: { content: "more" } };

const children: HttpCase[] = [
  ...cases("POST /v1/sessions/:id/subagents/:childId/messages", [
    ["an empty body", "INVALID_REQUEST", (w) => followupCase(w, w.child, {})],
    [
      "an unknown field",
      "INVALID_REQUEST",
      (w) => followupCase(w, w.child, { body: { content: "more", urgent: true } }),
    ],
    [
      "a delivery that is not one of the three",
      "INVALID_REQUEST",
      (w) => followupCase(w, w.child, { body: { content: "more", delivery: "urgent" } }),
    ],
    [
      "an idempotencyKey (not part of a follow-up)",
      "INVALID_REQUEST",
      (w) => followupCase(w, w.child, { body: { content: "more", idempotencyKey: "k1" } }),
    ],
    ["numeric content", "INVALID_REQUEST", (w) => followupCase(w, w.child, { body: { content: 3 } })],
    ["malformed JSON", "MALFORMED_JSON", (w) => followupCase(w, w.child, rawBody("{content: more}"))],
    ["an unknown child", "NOT_RESUMABLE", (w) => followupCase(w, GHOST, MORE)],
    ["a child id that is not a UUID", "NOT_RESUMABLE", (w) => followupCase(w, "no-such-child", MORE)],
    ["a session that is not a child", "UNAUTHORIZED", (w) => followupCase(w, w.b.id, MORE)],
    ["a one-shot child", "NOT_RESUMABLE", (w) => followupCase(w, w.child, MORE)],
    ["another session's token", "NOT_FOUND", (w) => followupCase(w, w.child, { ...MORE, token: w.b.token })],
  ]),
  ...cases("POST /v1/sessions/:id/subagents/:childId/interrupt", [
    ["a session that is not a child", "UNAUTHORIZED", (w) => api("POST", P.interrupt(w.a.id, w.b.id))],
    ["the session itself as its child", "UNAUTHORIZED", (w) => api("POST", P.interrupt(w.a.id, w.a.id))],
    [
      "another session's token",
      "NOT_FOUND",
      (w) => api("POST", P.interrupt(w.a.id, w.child), { token: w.b.token }),
    ],
    [
      "the parent's token acting as its child",
      "UNAUTHORIZED",
      (w) => api("POST", P.interrupt(w.child, GHOST), { token: w.a.token }),
    ],
    ["a parent id that is not a UUID", "NOT_FOUND", (w) => api("POST", P.interrupt("not-a-uuid", w.child))],
  ]),
  ...cases("POST /v1/sessions/:id/subagents/drain", [
    ["childIds as a string", "INVALID_REQUEST", (w) => drainCase(w, { childIds: w.child })],
    ["childIds of numbers", "INVALID_REQUEST", (w) => drainCase(w, { childIds: [1, 2] })],
    ["an empty child id", "INVALID_REQUEST", (w) => drainCase(w, { childIds: [""] })],
    [
      "257 child ids",
      "INVALID_REQUEST",
      (w) => drainCase(w, { childIds: Array.from({ length: 257 }, () => w.child) }),
    ],
    ["childIds null", "INVALID_REQUEST", (w) => drainCase(w, { childIds: null })],
    ["an unknown field", "INVALID_REQUEST", (w) => drainCase(w, { childIds: [w.child], force: true })],
    ["an unknown child id", "UNAUTHORIZED", (w) => drainCase(w, { childIds: [GHOST] })],
    ["a session that is not a child", "UNAUTHORIZED", (w) => drainCase(w, { childIds: [w.child, w.b.id] })],
    ["another session's token", "NOT_FOUND", (w) => drainCase(w, { childIds: [w.child] }, w.b.token)],
  ]),
  // the listings and the outbox, with tokens that must not open them
  ...(["children", "descendants", "outbox"] as const).flatMap((what) =>
    cases(`GET /v1/sessions/:id/${what}`, [
      ["another session's token", "NOT_FOUND", (w) => api("GET", P[what](w.a.id), { token: w.b.token })],
      [
        "the session's id with a wrong secret",
        "UNAUTHENTICATED",
        (w) => api("GET", P[what](w.a.id), { token: wrongSecret(w.a) }),
      ],
      [
        "a child's view with the parent's id and a wrong secret",
        "UNAUTHENTICATED",
        (w) => api("GET", P[what](w.child), { token: wrongSecret(w.a) }),
      ],
      ["no token", "UNAUTHENTICATED", (w) => api("GET", P[what](w.a.id), { token: null })],
      [
        "a tenant admin on a default-tenant session",
        "NOT_FOUND",
        (w) => api("GET", P[what](w.a.id), { token: TENANT_ADMIN }),
      ],
      ["a session id that is not a UUID", "NOT_FOUND", () => api("GET", P[what]("not-a-uuid"))],
    ]),
  ),
];

export const HTTP_CASES: HttpCase[] = [...registry, ...directory, ...delegation, ...children];

// ---------------------------------------------------------------- the catalogue (RPC entrypoint)

const START = { provider: "spawn", prompt: "hi" } as const;
type RpcRow = [name: string, code: string, run: (rpc: Rpc, w: World) => Promise<unknown>];

function rpcCases(method: string, rows: RpcRow[]): RpcCase[] {
  return rows.map(([name, code, run]) => ({ method, name, code, run }));
}

export const RPC_CASES: RpcCase[] = [
  ...rpcCases("createSession", [
    ["an unknown model route", "INVALID_REQUEST", (r) => r.createSession({ model: "gpt-4" })],
    ["an unknown field", "INVALID_REQUEST", (r) => r.createSession({ label: "x", tenant: "acme" })],
    ["a string instead of options", "INVALID_REQUEST", (r) => r.createSession("label")],
    ["null options", "INVALID_REQUEST", (r) => r.createSession(null)],
    ["an array of options", "INVALID_REQUEST", (r) => r.createSession([])],
    ["an unknown backgroundMode", "INVALID_REQUEST", (r) => r.createSession({ backgroundMode: "never" })],
    ["an empty toolFilter", "INVALID_REQUEST", (r) => r.createSession({ toolFilter: {} })],
    ["a numeric label", "INVALID_REQUEST", (r) => r.createSession({ label: 5 })],
  ]),
  ...rpcCases("send", [
    ["a session id that is not a UUID", "INVALID_REQUEST", (r) => r.send("not-a-uuid", { content: "hi" })],
    ["a numeric session id", "INVALID_REQUEST", (r) => r.send(42, { content: "hi" })],
    ["no arguments", "INVALID_REQUEST", (r) => r.send()],
    ["a message without content", "INVALID_REQUEST", (r, w) => r.send(w.a.id, {})],
    [
      "a message with an unknown field",
      "INVALID_REQUEST",
      (r, w) => r.send(w.a.id, { content: "hi", from: "x" }),
    ],
    ["a bare string message", "INVALID_REQUEST", (r, w) => r.send(w.a.id, "hi")],
    ["numeric content", "INVALID_REQUEST", (r, w) => r.send(w.a.id, { content: 5 })],
    [
      "an empty idempotencyKey",
      "INVALID_REQUEST",
      (r, w) => r.send(w.a.id, { content: "hi", idempotencyKey: "" }),
    ],
    ["a session that does not exist", "NOT_FOUND", (r) => r.send(GHOST, { content: "hi" })],
  ]),
  ...rpcCases("start", [
    ["a parent id that is not a UUID", "INVALID_REQUEST", (r) => r.start("parent", START)],
    ["an empty request", "INVALID_REQUEST", (r, w) => r.start(w.a.id, {})],
    ["no prompt", "INVALID_REQUEST", (r, w) => r.start(w.a.id, { provider: "spawn" })],
    [
      "a mode (not part of the RPC request)",
      "INVALID_REQUEST",
      (r, w) => r.start(w.a.id, { ...START, mode: "one-shot" }),
    ],
    ["a null request", "INVALID_REQUEST", (r, w) => r.start(w.a.id, null)],
    [
      "a childId that is not a UUID",
      "INVALID_REQUEST",
      (r, w) => r.start(w.a.id, { ...START, childId: "kid" }),
    ],
    ["an unknown provider", "NO_PROVIDER", (r, w) => r.start(w.a.id, { ...START, provider: "nope" })],
    ["maxDepth -1", "INVALID_MAX_DEPTH", (r, w) => r.start(w.a.id, { ...START, maxDepth: -1 })],
    ["maxDepth NaN", "INVALID_MAX_DEPTH", (r, w) => r.start(w.a.id, { ...START, maxDepth: Number.NaN })],
    ["maxDepth 0", "DEPTH_EXCEEDED", (r, w) => r.start(w.a.id, { ...START, maxDepth: 0 })],
    [
      "an array outputSchema",
      "INVALID_SCHEMA",
      (r, w) => r.start(w.a.id, { ...START, outputSchema: { type: "array" } }),
    ],
    [
      "a toolFilter for a remote provider",
      "UNSUPPORTED_CAPABILITY",
      (r, w) => r.start(w.a.id, { ...START, provider: REMOTE, toolFilter: { deny: ["echo"] } }),
    ],
    [
      "the childId of an existing child",
      "DUPLICATE_CHILD",
      (r, w) => r.start(w.a.id, { ...START, childId: w.reserved }),
    ],
    ["a parent that does not exist", "NOT_FOUND", (r) => r.start(GHOST, START)],
  ]),
  ...rpcCases("interrupt", [
    ["a session id that is not a UUID", "INVALID_REQUEST", (r) => r.interrupt("not-a-uuid")],
    ["a numeric session id", "INVALID_REQUEST", (r) => r.interrupt(123)],
    ["a null session id", "INVALID_REQUEST", (r) => r.interrupt(null)],
    ["a session that does not exist", "NOT_FOUND", (r) => r.interrupt(GHOST)],
  ]),
  ...rpcCases("events", [
    ["after=-2", "INVALID_REQUEST", (r, w) => r.events(w.a.id, -2)],
    ["limit=0", "INVALID_REQUEST", (r, w) => r.events(w.a.id, -1, 0)],
    ["limit=501", "INVALID_REQUEST", (r, w) => r.events(w.a.id, -1, 501)],
    ["after=1.5", "INVALID_REQUEST", (r, w) => r.events(w.a.id, 1.5)],
    ["after as a string", "INVALID_REQUEST", (r, w) => r.events(w.a.id, "0")],
    ["after=NaN", "INVALID_REQUEST", (r, w) => r.events(w.a.id, Number.NaN)],
    ["limit=Infinity", "INVALID_REQUEST", (r, w) => r.events(w.a.id, -1, Number.POSITIVE_INFINITY)],
    ["a session id that is not a UUID", "INVALID_REQUEST", (r) => r.events("x")],
    ["a session that does not exist", "NOT_FOUND", (r) => r.events(GHOST)],
  ]),
  ...rpcCases("describe", [
    ["a session id that is not a UUID", "INVALID_REQUEST", (r) => r.describe("x")],
    ["no session id", "INVALID_REQUEST", (r) => r.describe()],
    ["an object instead of an id", "INVALID_REQUEST", (r, w) => r.describe({ id: w.a.id })],
    ["a session id in upper case (another object)", "NOT_FOUND", (r, w) => r.describe(w.a.id.toUpperCase())],
    ["a session that does not exist", "NOT_FOUND", (r) => r.describe(GHOST)],
  ]),
];
