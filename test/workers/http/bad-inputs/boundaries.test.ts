import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../../../src/core/hash";
import { placedIdFromDigest } from "../../../../src/core/placement";
import { reservedId } from "../../../support/ids";
import {
  ADMIN,
  api,
  type ApiResult,
  createSession,
  expectError,
  field,
  openStream,
  readResult,
  sendMessage,
  startChild,
  startOneShot,
  startRun,
  TENANT_ADMIN,
  waitForRun,
  workerFetch,
} from "../../../support/api";
import { P } from "../../../support/bad-inputs/delegation-cases";
import {
  allEvents,
  settledTimes,
  waitForEvents,
  waitForTurnEnds,
  type WireEvent,
} from "../../../support/logs";
import {
  dumpTables,
  evict,
  hashOf,
  quiesce,
  registryStub,
  specOf,
  sqlRows,
  stub,
  useFirstUseTables,
} from "../../../support/objects";
import { script, toolCall } from "../../../support/scripts";
import { jsonRpcAnswer, mcpPath, postJsonRpc } from "../../../support/json-rpc";

/**
 * The boundaries of every numeric and length limit the HTTP API enforces (the zod schemas of
 * src/contract/wire.ts, run.ts, continuable.ts and content.ts, the provider names and bodies of
 * src/providers/catalog.ts, the `wait` of src/http/delegation-routes.ts, the directory cursor of
 * src/http/directory-cursor.ts). Every limit is sent twice:
 *
 * - AT its bound: accepted with its 2xx, and where it means something the bound is honoured (the
 *   stored value is the one sent, a page holds exactly `limit` items). Where the bound value passes
 *   the schema but fails a later check (a 128-character provider name is no registered provider),
 *   the answer is that later check's refusal, without validation issues: the schema let it through.
 * - ONE PAST it: refused with the documented status and stable code, the first validation issue
 *   naming the field and the validator's code, and every object involved hashing the same (tables
 *   and alarm) before and after: the session the request names, the child id it would reserve, any
 *   id it would derive (an idempotent create), the world's sessions it reads, and the provider
 *   registry with the session directory.
 *
 * Paging is checked across its page boundaries: N+1 items read with limit N give N and a cursor,
 * the cursor gives the rest, nothing twice and nothing missing; a page of exactly the remaining
 * items has no cursor; a cursor past the end gives an empty page. Then the limits outside the
 * HTTP schemas: the content cap on the A2A face (the same 1000 blocks as every other route), its
 * ListTasks page size (clamped to 1..50, never refused), the children a session may start
 * (MAX_CHILDREN_PER_SESSION), and the arguments of the session tools the MCP face serves (their
 * zod schemas in src/agent/: ids, messages, prompts, labels, reasons).
 *
 * Covered elsewhere, not repeated: the 256 KiB body limit (session-routes.test.ts), JSON nesting
 * 128/129 (test/unit/http/json-depth.test.ts), `maxDepth` forms and the delegation depth cap
 * (test/workers/delegation/one-shot/start-checks.test.ts), the per-token rate limit of 600 a
 * minute (test/workers/http/rate-limit.test.ts). Some one-past halves below overlap the
 * catalogues beside this file on purpose, so that each limit's pair reads in one place.
 */

interface Session {
  id: string;
  token: string;
}

/** What the world set up once: a quiet session with a settled one-shot child, and a long log. */
interface World {
  /** A top-level session with one turn and one settled one-shot child. */
  a: Session;
  child: string;
  runId: string;
  /** A session whose log holds more than 500 events (one turn of 500 `echo` calls). */
  long: Session;
}

/** What one case runs against: the world, a fresh quiet session, and an id no object exists under. */
interface Target {
  w: World;
  s: Session;
  /** The child id a start reserves. */
  spare: string;
  /** The id of the child a start reserving `spare` under `s` gets (a refused start leaves its object empty). */
  child: string;
}

type Send = (t: Target) => Promise<ApiResult>;

interface Refusal {
  status: number;
  code: string;
  /**
   * The first validation issue, `[path, zod code]`; `null`: no issues at all (the refusal comes
   * from a check after the schema, which let the value through).
   */
  issue?: readonly [path: string, code: string] | null;
  message?: RegExp;
}

interface Bound {
  route: string;
  /** The limit as the schema states it. */
  limit: string;
  at: Send;
  /** The status at the bound, or the refusal of the check after the schema. */
  accepted: number | Refusal;
  /** What shows that the bound value was taken as sent. */
  honoured?: (res: ApiResult, t: Target) => Promise<void>;
  past: Send;
  refused: Refusal;
  /** Session objects involved beyond the target, its spare id and the registry. */
  involved?: (t: Target) => Promise<string[]> | string[];
}

// ---------------------------------------------------------------- values at and past the bounds

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
/** The double right after 2 (2 + 2^-51): one past `temperature` <= 2. */
const JUST_OVER_TWO = 2.0000000000000004;
/** A URL of exactly `n` characters. */
const urlOf = (n: number, base = "https://example.com/"): string => base + "a".repeat(n - base.length);
const chars = (n: number, c = "x"): string => c.repeat(n);
const blocks = (n: number) => Array.from({ length: n }, (_, i) => ({ type: "text", text: `b${i}` }));
/** Distinct tool names a filter may name without a registered tool (any `mcp__<server>__<tool>`). */
const mcpToolNames = (n: number): string[] => Array.from({ length: n }, (_, i) => `mcp__srv__t${i}`);
const servers = (n: number, url = "https://mcp.example.com/mcp") =>
  Array.from({ length: n }, (_, i) => ({ name: `s${i}`, url }));
/** An idempotency key of exactly `n` characters, unique to the case. */
const keyOf = (t: Target, n: number): string => t.spare.padEnd(n, "k");
/** A provider name of exactly `n` characters, unique to the case. */
const providerName = (t: Target, n: number): string => `p${t.spare.replace(/-/g, "")}`.padEnd(n, "x");

/** The id a create with `key` lands on (session-create.ts: derived from tenant and key). */
async function keyedId(key: string, tenant = "default"): Promise<string> {
  return placedIdFromDigest(await sha256Hex(`${tenant}\n${key}`));
}

// ---------------------------------------------------------------- requests

/** Paths of the delegation, registry and directory routes, as their bad-input catalogue names them. */
const sessionsPath = P.sessions();
const subagentsOf = P.subagents;

const create =
  (body: Record<string, unknown>, headers?: Record<string, string>): Send =>
  () =>
    api("POST", sessionsPath, { body, ...(headers ? { headers } : {}) });
const createWith =
  (build: (t: Target) => Record<string, unknown>, headers?: (t: Target) => Record<string, string>): Send =>
  (t) =>
    api("POST", sessionsPath, { body: build(t), ...(headers ? { headers: headers(t) } : {}) });
const send =
  (body: Record<string, unknown>, headers?: (t: Target) => Record<string, string>): Send =>
  (t) =>
    api("POST", `/v1/sessions/${t.s.id}/messages`, { body, ...(headers ? { headers: headers(t) } : {}) });
const sendWith =
  (build: (t: Target) => Record<string, unknown>): Send =>
  (t) =>
    api("POST", `/v1/sessions/${t.s.id}/messages`, { body: build(t) });
const oneShot =
  (extra: Record<string, unknown>): Send =>
  (t) =>
    api("POST", subagentsOf(t.s.id), {
      body: { provider: "spawn", mode: "one-shot", prompt: "hi", childId: t.spare, ...extra },
    });
const continuable =
  (extra: Record<string, unknown>): Send =>
  (t) =>
    api("POST", subagentsOf(t.s.id), {
      body: {
        provider: "spawn",
        mode: "continuable",
        prompt: "hi",
        label: "helper",
        childId: t.spare,
        ...extra,
      },
    });
const drain = (t: Target, childIds: string[]) => api("POST", P.drain(t.s.id), { body: { childIds } });
const events =
  (which: "a" | "long", query: string): Send =>
  (t) =>
    api("GET", `/v1/sessions/${t.w[which].id}/events${query}`);
const runWait =
  (query: string): Send =>
  (t) =>
    api("GET", P.run(t.w.a.id, t.w.runId, query));
const providerEvents =
  (query: string): Send =>
  () =>
    api("GET", P.providerEvents(query));
const putProvider =
  (name: (t: Target) => string, body: Record<string, unknown>): Send =>
  (t) =>
    api("PUT", P.provider(name(t)), { body });
const directory =
  (query: string): Send =>
  () =>
    api("GET", P.sessions(query));

/** The answer to a stream request as an API result (a socket, if one opened, is closed; an SSE body is cancelled). */
async function streamResult(response: Response): Promise<ApiResult> {
  if (response.webSocket) {
    response.webSocket.accept();
    response.webSocket.close(1000, "test");
    return { status: response.status, headers: response.headers, body: undefined };
  }
  if (/^text\/event-stream/.test(response.headers.get("content-type") ?? "")) {
    await response.body?.cancel();
    return { status: response.status, headers: response.headers, body: undefined };
  }
  return readResult(response);
}

const sse =
  (lastEventId: string): Send =>
  async (t) =>
    streamResult(
      await workerFetch(
        new Request(`http://example.com/v1/sessions/${t.w.a.id}/events/stream`, {
          headers: {
            authorization: `Bearer ${ADMIN}`,
            accept: "text/event-stream",
            "last-event-id": lastEventId,
          },
        }),
      ),
    );
const socket =
  (after: number): Send =>
  async (t) =>
    streamResult(await openStream(t.w.a.id, { after }));

// ---------------------------------------------------------------- reading what was stored

/** The stored header of a session (options, callback and all: what no view shows). */
async function headerOf(id: string): Promise<any> {
  const [row] = await sqlRows(id, "SELECT body FROM header");
  return JSON.parse(String(row?.body));
}

/** The content blocks of one message in a session's inbox. */
async function inboxContent(id: string, messageId: string): Promise<{ type: string; text: string }[]> {
  const rows = await sqlRows(id, "SELECT content FROM inbox WHERE message_id = ?", messageId);
  expect(rows).toHaveLength(1);
  return JSON.parse(String(rows[0]!.content));
}

/** `n` distinct tenant names. */
const tenantNames = (n: number): string[] => Array.from({ length: n }, (_, i) => `tenant-${i}`);

const invalid = (path: string, code = "too_big"): Refusal => ({
  status: 400,
  code: "INVALID_REQUEST",
  issue: [path, code],
});

/** A `contextWindow` the schema takes but the deployment's MAX_CONTEXT_WINDOW refuses, naming both. */
const contextWindowPast: Refusal = {
  status: 400,
  code: "INVALID_REQUEST",
  issue: null,
  message:
    /^contextWindow: 1000001 is above this deployment's limit of 1000000 tokens \(MAX_CONTEXT_WINDOW\)$/,
};

function expectRefusal(res: ApiResult, expected: Refusal): void {
  expect(
    { status: res.status, code: field(res.body, "error", "code") },
    `answer: ${JSON.stringify(res.body)?.slice(0, 400)}`,
  ).toEqual({ status: expected.status, code: expected.code });
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/);
  const issues = field<{ path: string[]; code: string }[] | undefined>(res.body, "error", "issues");
  if (expected.issue === null) expect(issues).toBeUndefined();
  else if (expected.issue !== undefined) {
    const first = issues?.[0];
    expect(first && [first.path.join("."), first.code]).toEqual([...expected.issue]);
  }
  if (expected.message) expect(field<string>(res.body, "error", "message")).toMatch(expected.message);
}

/** SHA-256 over the tables and the alarm of every object given. */
async function stateOf(objects: readonly DurableObjectStub[]): Promise<string> {
  return hashOf(
    await Promise.all(
      objects.map(async (o) => ({
        tables: await dumpTables(o),
        alarm: await runInDurableObject(o, (_i: unknown, state: DurableObjectState) =>
          state.storage.getAlarm(),
        ),
      })),
    ),
  );
}

async function objectsOf(bound: Bound, t: Target): Promise<DurableObjectStub[]> {
  const extra = (await bound.involved?.(t)) ?? [];
  return [...[t.s.id, t.child, ...extra].map(stub), registryStub()];
}

const statusOf = (accepted: number | Refusal): string =>
  typeof accepted === "number" ? String(accepted) : `${accepted.status} ${accepted.code} (past the schema)`;

// ---------------------------------------------------------------- the table

const CREATE = "POST /v1/sessions";
const SEND = "POST /v1/sessions/:id/messages";
const START = "POST /v1/sessions/:id/subagents";
const DRAIN = "POST /v1/sessions/:id/subagents/drain";
const EVENTS = "GET /v1/sessions/:id/events";
const STREAM = "GET /v1/sessions/:id/events/stream";
const RUN = "GET /v1/sessions/:id/runs/:runId";
const REGISTRY_EVENTS = "GET /v1/providers/events";
const PUT = "PUT /v1/providers/:name";
const LIST = "GET /v1/sessions";

/** The world's sessions a read names (they must not change either). */
const worldA = (t: Target) => [t.w.a.id, t.w.child];
const worldLong = (t: Target) => [t.w.long.id];

const BOUNDS: Bound[] = [
  // ---- creating a session ----
  {
    route: CREATE,
    limit: "label <= 200 characters",
    at: create({ label: chars(200) }),
    accepted: 201,
    honoured: async (res) => {
      expect(res.body.label).toBe(chars(200));
      const listed = await api("GET", `${sessionsPath}?limit=200`);
      const entry = listed.body.sessions.find((s: { id: string }) => s.id === res.body.id);
      expect(entry?.label).toBe(chars(200));
    },
    past: create({ label: chars(201) }),
    refused: invalid("label"),
  },
  {
    route: CREATE,
    limit: "label >= 1 character",
    at: create({ label: "x" }),
    accepted: 201,
    honoured: async (res) => expect(res.body.label).toBe("x"),
    past: create({ label: "" }),
    refused: invalid("label", "too_small"),
  },
  {
    route: CREATE,
    limit: "model route <= 200 characters",
    at: create({ model: `openai:${chars(193, "m")}` }),
    accepted: 201,
    honoured: async (res) => expect(res.body.model).toBe(`openai:${chars(193, "m")}`),
    past: create({ model: `openai:${chars(194, "m")}` }),
    refused: invalid("model"),
  },
  {
    route: CREATE,
    limit: "temperature <= 2",
    at: create({ temperature: 2 }),
    accepted: 201,
    honoured: async (res) => expect((await headerOf(res.body.id)).options.temperature).toBe(2),
    past: create({ temperature: JUST_OVER_TWO }),
    refused: invalid("temperature"),
  },
  {
    route: CREATE,
    limit: "temperature >= 0",
    at: create({ temperature: 0 }),
    accepted: 201,
    honoured: async (res) => expect((await headerOf(res.body.id)).options.temperature).toBe(0),
    past: create({ temperature: -Number.MIN_VALUE }),
    refused: invalid("temperature", "too_small"),
  },
  {
    route: CREATE,
    limit: "maxOutputTokens <= 1,000,000",
    at: create({ maxOutputTokens: 1_000_000 }),
    accepted: 201,
    honoured: async (res) => expect((await headerOf(res.body.id)).options.maxOutputTokens).toBe(1_000_000),
    past: create({ maxOutputTokens: 1_000_001 }),
    refused: invalid("maxOutputTokens"),
  },
  {
    route: CREATE,
    limit: "maxOutputTokens >= 1",
    at: create({ maxOutputTokens: 1 }),
    accepted: 201,
    honoured: async (res) => expect((await headerOf(res.body.id)).options.maxOutputTokens).toBe(1),
    past: create({ maxOutputTokens: 0 }),
    refused: invalid("maxOutputTokens", "too_small"),
  },
  {
    // the schema takes up to 100,000,000; the deployment's MAX_CONTEXT_WINDOW (1,000,000) refuses more
    route: CREATE,
    limit: "contextWindow <= MAX_CONTEXT_WINDOW (1,000,000)",
    at: create({ contextWindow: 1_000_000 }),
    accepted: 201,
    honoured: async (res) => expect((await headerOf(res.body.id)).options.contextWindow).toBe(1_000_000),
    past: createWith((t) => ({ contextWindow: 1_000_001, idempotencyKey: keyOf(t, 40) })),
    refused: contextWindowPast,
    involved: async (t) => [await keyedId(keyOf(t, 40))],
  },
  {
    route: CREATE,
    limit: "budget.tokens <= 2^53 - 1",
    at: create({ budget: { tokens: MAX_SAFE } }),
    accepted: 201,
    honoured: async (res) => expect(res.body.budget).toEqual({ tokens: MAX_SAFE, used: 0 }),
    past: create({ budget: { tokens: 2 ** 53 } }),
    refused: invalid("budget.tokens"),
  },
  {
    route: CREATE,
    limit: "budget.tokens >= 1",
    at: create({ budget: { tokens: 1 } }),
    accepted: 201,
    honoured: async (res) => expect(res.body.budget).toEqual({ tokens: 1, used: 0 }),
    past: create({ budget: { tokens: 0 } }),
    refused: invalid("budget.tokens", "too_small"),
  },
  {
    route: CREATE,
    limit: "persona <= 32,768 characters",
    at: create({ persona: chars(32_768) }),
    accepted: 201,
    honoured: async (res) => expect((await headerOf(res.body.id)).options.persona).toBe(chars(32_768)),
    past: create({ persona: chars(32_769) }),
    refused: invalid("persona"),
  },
  {
    route: CREATE,
    limit: "providers <= 32 names",
    at: create({ providers: Array.from({ length: 32 }, (_, i) => `p${i}`) }),
    accepted: 201,
    honoured: async (res) =>
      expect((await headerOf(res.body.id)).options.providers).toEqual(
        Array.from({ length: 32 }, (_, i) => `p${i}`),
      ),
    past: create({ providers: Array.from({ length: 33 }, (_, i) => `p${i}`) }),
    refused: invalid("providers"),
  },
  {
    route: CREATE,
    limit: "a providers name <= 128 characters",
    at: create({ providers: [chars(128, "p")] }),
    accepted: 201,
    honoured: async (res) =>
      expect((await headerOf(res.body.id)).options.providers).toEqual([chars(128, "p")]),
    past: create({ providers: [chars(129, "p")] }),
    refused: invalid("providers.0"),
  },
  {
    route: CREATE,
    limit: "toolFilter.deny <= 256 names",
    at: create({ toolFilter: { deny: mcpToolNames(256) } }),
    accepted: 201,
    honoured: async (res) =>
      expect((await headerOf(res.body.id)).options.toolFilter).toEqual({ deny: mcpToolNames(256) }),
    past: create({ toolFilter: { deny: mcpToolNames(257) } }),
    refused: invalid("toolFilter.deny"),
  },
  {
    route: CREATE,
    limit: "a toolFilter name <= 128 characters",
    at: create({ toolFilter: { allow: [`mcp__srv__${chars(118)}`] } }),
    accepted: 201,
    honoured: async (res) =>
      expect((await headerOf(res.body.id)).options.toolFilter).toEqual({
        allow: [`mcp__srv__${chars(118)}`],
      }),
    past: create({ toolFilter: { allow: [`mcp__srv__${chars(119)}`] } }),
    refused: invalid("toolFilter.allow.0"),
  },
  {
    route: CREATE,
    limit: "mcpServers <= 8",
    at: create({ mcpServers: servers(8) }),
    accepted: 201,
    honoured: async (res) => expect(res.body.mcpServers).toEqual(servers(8)),
    past: create({ mcpServers: servers(9) }),
    refused: invalid("mcpServers"),
  },
  {
    route: CREATE,
    limit: "an mcpServers name <= 32 characters",
    at: create({ mcpServers: [{ name: chars(32, "n"), url: "https://mcp.example.com/mcp" }] }),
    accepted: 201,
    honoured: async (res) =>
      expect(res.body.mcpServers).toEqual([{ name: chars(32, "n"), url: "https://mcp.example.com/mcp" }]),
    past: create({ mcpServers: [{ name: chars(33, "n"), url: "https://mcp.example.com/mcp" }] }),
    refused: invalid("mcpServers.0.name", "invalid_format"),
  },
  {
    route: CREATE,
    limit: "an mcpServers token <= 4096 characters",
    at: create({
      mcpServers: [{ name: "tok", url: "https://mcp.example.com/mcp", token: chars(4096, "t") }],
    }),
    accepted: 201,
    honoured: async (res) => {
      // write-only: kept in the header, never shown
      expect(res.body.mcpServers).toEqual([{ name: "tok", url: "https://mcp.example.com/mcp" }]);
      expect((await headerOf(res.body.id)).options.mcpServers[0].token).toBe(chars(4096, "t"));
    },
    past: create({
      mcpServers: [{ name: "tok", url: "https://mcp.example.com/mcp", token: chars(4097, "t") }],
    }),
    refused: invalid("mcpServers.0.token"),
  },
  {
    route: CREATE,
    limit: "an mcpServers url <= 2048 characters",
    at: create({ mcpServers: [{ name: "long", url: urlOf(2048) }] }),
    accepted: 201,
    honoured: async (res) => expect(res.body.mcpServers).toEqual([{ name: "long", url: urlOf(2048) }]),
    past: create({ mcpServers: [{ name: "long", url: urlOf(2049) }] }),
    refused: invalid("mcpServers.0.url"),
  },
  {
    route: CREATE,
    limit: "callback.secret >= 16 characters",
    at: create({ callback: { url: "https://parent.test/cb", secret: chars(16, "s") } }),
    accepted: 201,
    honoured: async (res) =>
      expect((await headerOf(res.body.id)).callback).toEqual({
        url: "https://parent.test/cb",
        secret: chars(16, "s"),
      }),
    past: create({ callback: { url: "https://parent.test/cb", secret: chars(15, "s") } }),
    refused: invalid("callback.secret", "too_small"),
  },
  {
    route: CREATE,
    limit: "callback.secret <= 256 characters",
    at: create({ callback: { url: "https://parent.test/cb", secret: chars(256, "s") } }),
    accepted: 201,
    honoured: async (res) => expect((await headerOf(res.body.id)).callback.secret).toBe(chars(256, "s")),
    past: create({ callback: { url: "https://parent.test/cb", secret: chars(257, "s") } }),
    refused: invalid("callback.secret"),
  },
  {
    route: CREATE,
    limit: "callback.url <= 2048 characters",
    at: create({ callback: { url: urlOf(2048, "https://parent.test/"), secret: chars(16, "s") } }),
    accepted: 201,
    honoured: async (res) =>
      expect((await headerOf(res.body.id)).callback.url).toBe(urlOf(2048, "https://parent.test/")),
    past: create({ callback: { url: urlOf(2049, "https://parent.test/"), secret: chars(16, "s") } }),
    refused: invalid("callback.url"),
  },
  {
    route: CREATE,
    limit: "idempotencyKey <= 200 characters (body)",
    at: createWith((t) => ({ idempotencyKey: keyOf(t, 200) })),
    accepted: 201,
    honoured: async (res, t) => {
      expect(res.body.id).toBe(await keyedId(keyOf(t, 200)));
      const replay = await api("POST", sessionsPath, { body: { idempotencyKey: keyOf(t, 200) } });
      expect({ status: replay.status, id: replay.body.id, token: replay.body.token }).toEqual({
        status: 200,
        id: res.body.id,
        token: undefined,
      });
    },
    past: createWith((t) => ({ idempotencyKey: keyOf(t, 201) })),
    refused: invalid("idempotencyKey"),
    involved: async (t) => [await keyedId(keyOf(t, 201))],
  },
  {
    route: CREATE,
    limit: "Idempotency-Key header <= 200 characters",
    at: createWith(
      () => ({}),
      (t) => ({ "idempotency-key": keyOf(t, 200) }),
    ),
    accepted: 201,
    honoured: async (res, t) => {
      expect(res.body.id).toBe(await keyedId(keyOf(t, 200)));
      const replay = await api("POST", sessionsPath, {
        body: {},
        headers: { "idempotency-key": keyOf(t, 200) },
      });
      expect({ status: replay.status, id: replay.body.id }).toEqual({ status: 200, id: res.body.id });
    },
    past: createWith(
      () => ({}),
      (t) => ({ "idempotency-key": keyOf(t, 201) }),
    ),
    refused: invalid("idempotencyKey"),
    involved: async (t) => [await keyedId(keyOf(t, 201))],
  },
  {
    route: CREATE,
    limit: "delegationDepth <= 64",
    at: create({ delegationDepth: 64 }),
    accepted: 201,
    honoured: async (res) => expect(res.body.delegationDepth).toBe(64),
    past: create({ delegationDepth: 65 }),
    refused: invalid("delegationDepth"),
  },
  {
    route: CREATE,
    limit: "delegationDepth >= 0",
    at: create({ delegationDepth: 0 }),
    accepted: 201,
    honoured: async (res) => expect(res.body.delegationDepth).toBe(0),
    past: create({ delegationDepth: -1 }),
    refused: invalid("delegationDepth", "too_small"),
  },
  // ---- sending a message ----
  {
    route: SEND,
    limit: "content <= 1000 blocks",
    at: send({ content: blocks(1000) }),
    accepted: 202,
    honoured: async (res, t) => expect(await inboxContent(t.s.id, res.body.messageId)).toEqual(blocks(1000)),
    past: send({ content: blocks(1001) }),
    refused: invalid("content", "invalid_union"),
  },
  {
    route: SEND,
    limit: "idempotencyKey <= 200 characters (body)",
    at: sendWith((t) => ({ content: "once", idempotencyKey: keyOf(t, 200) })),
    accepted: 202,
    honoured: async (res, t) => {
      const again = await api("POST", `/v1/sessions/${t.s.id}/messages`, {
        body: { content: "once", idempotencyKey: keyOf(t, 200) },
      });
      expect({ status: again.status, messageId: again.body.messageId }).toEqual({
        status: 202,
        messageId: res.body.messageId,
      });
    },
    past: sendWith((t) => ({ content: "once", idempotencyKey: keyOf(t, 201) })),
    refused: invalid("idempotencyKey"),
  },
  {
    route: SEND,
    limit: "Idempotency-Key header <= 200 characters",
    at: send({ content: "once" }, (t) => ({ "idempotency-key": keyOf(t, 200) })),
    accepted: 202,
    honoured: async (res, t) => {
      const again = await api("POST", `/v1/sessions/${t.s.id}/messages`, {
        body: { content: "once" },
        headers: { "idempotency-key": keyOf(t, 200) },
      });
      expect({ status: again.status, messageId: again.body.messageId }).toEqual({
        status: 202,
        messageId: res.body.messageId,
      });
    },
    past: send({ content: "once" }, (t) => ({ "idempotency-key": keyOf(t, 201) })),
    refused: invalid("idempotencyKey"),
  },
  // ---- starting a one-shot child (the refused start must leave the reserved child id unknown) ----
  {
    route: START,
    limit: "label <= 200 characters",
    at: oneShot({ label: chars(200) }),
    accepted: 201,
    honoured: async (res, t) => {
      expect(res.body.id).toBe(t.child);
      expect((await specOf(t.s.id, t.child)).label).toBe(chars(200));
    },
    past: oneShot({ label: chars(201) }),
    refused: invalid("label"),
  },
  {
    route: START,
    limit: "prompt <= 1000 blocks",
    at: oneShot({ prompt: blocks(1000) }),
    accepted: 201,
    honoured: async (_res, t) => expect((await specOf(t.s.id, t.child)).prompt).toEqual(blocks(1000)),
    past: oneShot({ prompt: blocks(1001) }),
    refused: invalid("prompt", "invalid_union"),
  },
  {
    route: START,
    limit: "persona <= 32,768 characters",
    at: oneShot({ persona: chars(32_768) }),
    accepted: 201,
    honoured: async (_res, t) => expect((await specOf(t.s.id, t.child)).options.persona).toBe(chars(32_768)),
    past: oneShot({ persona: chars(32_769) }),
    refused: invalid("persona"),
  },
  {
    route: START,
    limit: "maxOutputTokens <= 1,000,000",
    at: oneShot({ maxOutputTokens: 1_000_000 }),
    accepted: 201,
    honoured: async (_res, t) =>
      expect((await specOf(t.s.id, t.child)).options.maxOutputTokens).toBe(1_000_000),
    past: oneShot({ maxOutputTokens: 1_000_001 }),
    refused: invalid("maxOutputTokens"),
  },
  {
    route: START,
    limit: "contextWindow <= MAX_CONTEXT_WINDOW (1,000,000)",
    at: oneShot({ contextWindow: 1_000_000 }),
    accepted: 201,
    honoured: async (_res, t) =>
      expect((await specOf(t.s.id, t.child)).options.contextWindow).toBe(1_000_000),
    past: oneShot({ contextWindow: 1_000_001 }),
    refused: contextWindowPast,
  },
  {
    route: START,
    limit: "a continuable contextWindow <= MAX_CONTEXT_WINDOW (1,000,000)",
    at: continuable({ contextWindow: 1_000_000 }),
    accepted: 202,
    honoured: async (res) => expect((await headerOf(res.body.childId)).options.contextWindow).toBe(1_000_000),
    past: continuable({ contextWindow: 1_000_001 }),
    refused: contextWindowPast,
  },
  {
    route: START,
    limit: "temperature <= 2",
    at: oneShot({ temperature: 2 }),
    accepted: 201,
    honoured: async (_res, t) => expect((await specOf(t.s.id, t.child)).options.temperature).toBe(2),
    past: oneShot({ temperature: JUST_OVER_TWO }),
    refused: invalid("temperature"),
  },
  {
    route: START,
    limit: "toolFilter.allow <= 256 names",
    at: oneShot({ toolFilter: { allow: mcpToolNames(256) } }),
    accepted: 201,
    honoured: async (_res, t) =>
      expect((await specOf(t.s.id, t.child)).options.toolFilter).toEqual({ allow: mcpToolNames(256) }),
    past: oneShot({ toolFilter: { allow: mcpToolNames(257) } }),
    refused: invalid("toolFilter.allow"),
  },
  {
    route: START,
    limit: "mcpServers <= 8",
    at: oneShot({ mcpServers: servers(8, (env as unknown as { TEST_MCP_URL: string }).TEST_MCP_URL) }),
    accepted: 201,
    honoured: async (_res, t) =>
      expect((await specOf(t.s.id, t.child)).options.mcpServers?.map((m) => m.name)).toEqual(
        servers(8).map((m) => m.name),
      ),
    past: oneShot({ mcpServers: servers(9) }),
    refused: invalid("mcpServers"),
  },
  {
    route: START,
    limit: "label >= 1 character",
    at: oneShot({ label: "x" }),
    accepted: 201,
    honoured: async (_res, t) => expect((await specOf(t.s.id, t.child)).label).toBe("x"),
    past: oneShot({ label: "" }),
    refused: invalid("label", "too_small"),
  },
  {
    // the schema takes 128 characters; no provider can have such a name (names are at most 64)
    route: START,
    limit: "provider <= 128 characters",
    at: oneShot({ provider: chars(128, "p") }),
    accepted: { status: 404, code: "NO_PROVIDER", issue: null },
    past: oneShot({ provider: chars(129, "p") }),
    refused: invalid("provider"),
  },
  {
    // the schema takes 128 characters; the start sequence then wants a UUID
    route: START,
    limit: "childId <= 128 characters",
    at: oneShot({ childId: chars(128, "c") }),
    accepted: { status: 400, code: "INVALID_REQUEST", issue: null, message: /^childId must be a UUID$/ },
    past: oneShot({ childId: chars(129, "c") }),
    refused: invalid("childId"),
  },
  // ---- starting a continuable child ----
  {
    route: START,
    limit: "a continuable label <= 200 characters",
    at: continuable({ label: chars(200) }),
    accepted: 202,
    honoured: async (res, t) => {
      expect(res.body.childId).toBe(t.child);
      const rows = await sqlRows(t.s.id, "SELECT label FROM children WHERE child_id = ?", t.child);
      expect(rows).toEqual([{ label: chars(200) }]);
    },
    past: continuable({ label: chars(201) }),
    refused: invalid("label"),
  },
  {
    route: START,
    limit: "a continuable label >= 1 character",
    at: continuable({ label: "x" }),
    accepted: 202,
    honoured: async (res, t) => expect(res.body.childId).toBe(t.child),
    past: continuable({ label: "" }),
    refused: invalid("label", "too_small"),
  },
  // ---- draining ----
  {
    route: DRAIN,
    limit: "childIds <= 256",
    at: async (t) => {
      const { id } = await startOneShot(t.s.id, { prompt: "hi", childId: t.spare });
      return drain(
        t,
        Array.from({ length: 256 }, () => id),
      );
    },
    accepted: 200,
    // a one-shot child is not drained: the answer names none
    honoured: async (res) => expect(res.body).toEqual({ drained: [] }),
    past: (t) =>
      drain(
        t,
        Array.from({ length: 257 }, () => t.spare),
      ),
    refused: invalid("childIds"),
  },
  {
    // the schema takes 128 characters; the session then finds no such child
    route: DRAIN,
    limit: "a child id <= 128 characters",
    at: (t) => drain(t, [chars(128, "c")]),
    accepted: { status: 403, code: "UNAUTHORIZED", issue: null },
    past: (t) => drain(t, [chars(129, "c")]),
    refused: invalid("childIds.0"),
  },
  // ---- reading a run ----
  {
    route: RUN,
    limit: "wait <= 30,000 ms",
    at: runWait("?wait=30000"),
    accepted: 200,
    // a settled run answers at once, whatever the wait
    honoured: async (res, t) => expect(res.body).toMatchObject({ runId: t.w.runId, state: "settled" }),
    past: runWait("?wait=30001"),
    refused: invalid("wait"),
    involved: worldA,
  },
  {
    route: RUN,
    limit: "wait of at most 6 digits",
    at: runWait("?wait=030000"),
    accepted: 200,
    honoured: async (res) => expect(res.body.state).toBe("settled"),
    past: runWait("?wait=0030000"),
    refused: invalid("wait", "invalid_format"),
    involved: worldA,
  },
  {
    route: RUN,
    limit: "wait >= 0",
    at: runWait("?wait=0"),
    accepted: 200,
    honoured: async (res) => expect(res.body.state).toBe("settled"),
    past: runWait("?wait=-1"),
    refused: invalid("wait", "invalid_format"),
    involved: worldA,
  },
  // ---- reading a log ----
  {
    route: EVENTS,
    limit: "limit <= 500",
    at: events("long", "?limit=500"),
    accepted: 200,
    honoured: async (res) => {
      const seqs = (res.body.events as WireEvent[]).map((e) => e.seq);
      expect(seqs).toEqual(Array.from({ length: 500 }, (_, i) => i));
      expect(res.body.next).toBe(499);
    },
    past: events("long", "?limit=501"),
    refused: invalid("limit"),
    involved: worldLong,
  },
  {
    route: EVENTS,
    limit: "limit >= 1",
    at: events("long", "?limit=1"),
    accepted: 200,
    honoured: async (res) => {
      expect((res.body.events as WireEvent[]).map((e) => e.seq)).toEqual([0]);
      expect(res.body.next).toBe(0);
    },
    past: events("long", "?limit=0"),
    refused: invalid("limit", "too_small"),
    involved: worldLong,
  },
  {
    route: EVENTS,
    limit: "after <= 2^53 - 1",
    at: events("a", `?after=${MAX_SAFE}`),
    accepted: 200,
    honoured: async (res) => expect(res.body).toEqual({ events: [], next: null }),
    past: events("a", `?after=${2 ** 53}`),
    refused: invalid("after"),
    involved: worldA,
  },
  {
    route: EVENTS,
    limit: "after >= -1",
    at: events("a", "?after=-1&limit=1"),
    accepted: 200,
    honoured: async (res) => expect((res.body.events as WireEvent[]).map((e) => e.seq)).toEqual([0]),
    past: events("a", "?after=-2"),
    refused: invalid("after", "too_small"),
    involved: worldA,
  },
  {
    route: EVENTS,
    limit: "after of at most 16 digits",
    at: events("a", "?after=0000000000000001&limit=1"),
    accepted: 200,
    honoured: async (res) => expect((res.body.events as WireEvent[]).map((e) => e.seq)).toEqual([2]),
    past: events("a", "?after=00000000000000001&limit=1"),
    refused: invalid("after", "invalid_format"),
    involved: worldA,
  },
  {
    route: EVENTS,
    limit: "after is an integer",
    at: events("a", "?after=1&limit=1"),
    accepted: 200,
    honoured: async (res) => expect((res.body.events as WireEvent[]).map((e) => e.seq)).toEqual([2]),
    past: events("a", "?after=1.5&limit=1"),
    refused: invalid("after", "invalid_format"),
    involved: worldA,
  },
  {
    route: STREAM,
    limit: "after <= 2^53 - 1 (WebSocket)",
    at: socket(MAX_SAFE),
    accepted: 101,
    past: socket(2 ** 53),
    refused: invalid("after"),
    involved: worldA,
  },
  {
    route: STREAM,
    limit: "Last-Event-ID <= 2^53 - 1 (Server-Sent Events)",
    at: sse(String(MAX_SAFE)),
    accepted: 200,
    honoured: async (res) => expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/),
    past: sse(String(2 ** 53)),
    refused: {
      status: 400,
      code: "INVALID_REQUEST",
      issue: null,
      message: /^Last-Event-ID: not an event seq$/,
    },
    involved: worldA,
  },
  // ---- the provider registry ----
  {
    route: REGISTRY_EVENTS,
    limit: "limit <= 500",
    at: providerEvents("?limit=500"),
    accepted: 200,
    // fewer than 500 events: the page is all of them, without a cursor
    honoured: async (res) => {
      const seqs = (res.body.events as WireEvent[]).map((e) => e.seq);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i));
      expect(seqs.length).toBeGreaterThanOrEqual(2);
      expect(res.body.next).toBeNull();
    },
    past: providerEvents("?limit=501"),
    refused: invalid("limit"),
  },
  {
    route: REGISTRY_EVENTS,
    limit: "after <= 2^53 - 1",
    at: providerEvents(`?after=${MAX_SAFE}`),
    accepted: 200,
    honoured: async (res) => expect(res.body).toEqual({ events: [], next: null }),
    past: providerEvents(`?after=${2 ** 53}`),
    refused: invalid("after"),
  },
  {
    route: PUT,
    limit: "name <= 64 characters",
    at: putProvider((t) => providerName(t, 64), { kind: "spawn" }),
    accepted: 201,
    honoured: async (res, t) => {
      const name = providerName(t, 64);
      expect(res.body).toMatchObject({ name, kind: "spawn" });
      const listed = await api("GET", "/v1/providers");
      expect(listed.body.providers.map((p: { name: string }) => p.name)).toContain(name);
      // and a start may name it
      const started = await startOneShot(t.s.id, { provider: name, prompt: "hi" });
      expect(started.local).toBe(true);
    },
    past: putProvider((t) => providerName(t, 65), { kind: "spawn" }),
    refused: {
      status: 400,
      code: "INVALID_REQUEST",
      issue: null,
      message: /^provider names are 1-64 of a-z, 0-9, _ and -, starting with a letter$/,
    },
  },
  {
    route: PUT,
    limit: "a remote url <= 2048 characters",
    at: putProvider((t) => providerName(t, 40), { kind: "remote", url: urlOf(2048) }),
    accepted: 201,
    honoured: async (res) => expect(res.body.url).toBe(urlOf(2048)),
    past: putProvider((t) => providerName(t, 40), { kind: "remote", url: urlOf(2049) }),
    refused: invalid("url"),
  },
  {
    route: PUT,
    limit: "an acp url <= 2048 characters",
    at: putProvider((t) => providerName(t, 40), { kind: "acp", url: urlOf(2048, "wss://acp.example.com/") }),
    accepted: 201,
    honoured: async (res) => expect(res.body.url).toBe(urlOf(2048, "wss://acp.example.com/")),
    past: putProvider((t) => providerName(t, 40), {
      kind: "acp",
      url: urlOf(2049, "wss://acp.example.com/"),
    }),
    refused: invalid("url"),
  },
  {
    route: PUT,
    limit: "a token <= 4096 characters",
    at: putProvider((t) => providerName(t, 40), {
      kind: "remote",
      url: "https://example.com",
      token: chars(4096, "t"),
    }),
    accepted: 201,
    honoured: async (res, t) => {
      expect(res.body.token).toBeUndefined(); // never shown
      const rows = (await dumpTables(registryStub())).providers ?? [];
      const row = rows.find((r) => r.name === providerName(t, 40));
      expect(JSON.parse(String(row?.record)).token).toBe(chars(4096, "t"));
    },
    past: putProvider((t) => providerName(t, 40), {
      kind: "remote",
      url: "https://example.com",
      token: chars(4097, "t"),
    }),
    refused: invalid("token"),
  },
  {
    route: PUT,
    limit: "tenants: at most 64",
    at: putProvider((t) => providerName(t, 40), { kind: "spawn", tenants: tenantNames(64) }),
    accepted: 201,
    honoured: async (res) => expect(res.body.tenants).toEqual(tenantNames(64)),
    past: putProvider((t) => providerName(t, 40), { kind: "spawn", tenants: tenantNames(65) }),
    refused: invalid("tenants"),
  },
  {
    route: PUT,
    limit: "tenants: at least 1",
    at: putProvider((t) => providerName(t, 40), { kind: "spawn", tenants: ["acme"] }),
    accepted: 201,
    honoured: async (res, t) => {
      expect(res.body.tenants).toEqual(["acme"]);
      // registered for acme only: this deployment-tenant session may not start through it
      expectError(
        await startRun(t.s.id, { provider: providerName(t, 40), prompt: "hi" }),
        404,
        "NO_PROVIDER",
      );
    },
    past: putProvider((t) => providerName(t, 40), { kind: "spawn", tenants: [] }),
    refused: invalid("tenants", "too_small"),
  },
  {
    route: PUT,
    limit: "a tenant name <= 64 characters",
    at: putProvider((t) => providerName(t, 40), { kind: "spawn", tenants: [chars(64, "t")] }),
    accepted: 201,
    honoured: async (res) => expect(res.body.tenants).toEqual([chars(64, "t")]),
    past: putProvider((t) => providerName(t, 40), { kind: "spawn", tenants: [chars(65, "t")] }),
    refused: invalid("tenants.0", "invalid_format"),
  },
  // ---- the session directory (its paging is tested below) ----
  {
    route: LIST,
    limit: "limit >= 1",
    at: directory("?limit=1"),
    accepted: 200,
    honoured: async (res) => {
      expect(res.body.sessions).toHaveLength(1);
      expect(res.body.next).toBe(`${res.body.sessions[0].createdAt}.${res.body.sessions[0].id}`);
    },
    past: directory("?limit=0"),
    refused: invalid("limit", "too_small"),
  },
  {
    route: LIST,
    limit: "limit <= 200",
    at: directory("?limit=200"),
    accepted: 200,
    honoured: async (res) => expect(res.body.sessions.length).toBeLessThanOrEqual(200),
    past: directory("?limit=201"),
    refused: invalid("limit"),
  },
  {
    // the schema takes 3 characters; no cursor is that short
    route: LIST,
    limit: "cursor >= 3 characters",
    at: directory("?cursor=1.x"),
    accepted: { status: 400, code: "INVALID_REQUEST", issue: null, message: /^cursor: not a cursor/ },
    past: directory("?cursor=1."),
    refused: invalid("cursor", "too_small"),
  },
];

// ---------------------------------------------------------------- the world

let world: World;

async function target(): Promise<Target> {
  const s = await createSession({ label: "bounds-probe" });
  const spare = crypto.randomUUID();
  return { w: world, s, spare, child: reservedId(s.id, spare) };
}

beforeAll(async () => {
  const a = await createSession({ label: "bounds-world" });
  await sendMessage(a.id, "history");
  await waitForTurnEnds(a.id, 1);
  const { runId, id: child } = await startOneShot(a.id, { prompt: "ping" });
  await waitForRun(a.id, runId);
  await waitForEvents(a.id, (log) => log.some((e) => e.type === "subagent/end"));
  const long = await createSession({ label: "bounds-long-log" });
  await sendMessage(
    long.id,
    script({ call: Array.from({ length: 500 }, (_, i) => toolCall("echo", { text: `e${i}` })) }),
  );
  await waitForTurnEnds(long.id, 1, 60_000);
  await quiesce([a.id, child, long.id]);
  world = { a, child, runId, long };
}, 120_000);

describe("every limit of the HTTP API at its bound is accepted; one past it is refused and changes nothing", () => {
  it("covers every limit in pairs, each named once", () => {
    const names = BOUNDS.map((b) => `${b.route} ${b.limit}`);
    expect(new Set(names).size).toBe(names.length);
    expect(BOUNDS.length).toBeGreaterThanOrEqual(50);
  });

  for (const bound of BOUNDS) {
    const { status, code } = bound.refused;
    it(`${bound.route} ${bound.limit}: one past is refused ${status} ${code}, and nothing changes`, async () => {
      const t = await target();
      const objects = await objectsOf(bound, t);
      const before = await stateOf(objects);
      expectRefusal(await bound.past(t), bound.refused);
      expect(await stateOf(objects)).toBe(before);
    });

    it(`${bound.route} ${bound.limit}: at the bound answers ${statusOf(bound.accepted)}`, async () => {
      const t = await target();
      if (typeof bound.accepted === "number") {
        const res = await bound.at(t);
        expect(res.status, JSON.stringify(res.body)?.slice(0, 400)).toBe(bound.accepted);
        await bound.honoured?.(res, t);
        return;
      }
      const objects = await objectsOf(bound, t);
      const before = await stateOf(objects);
      expectRefusal(await bound.at(t), bound.accepted);
      expect(await stateOf(objects)).toBe(before);
    });
  }
});

describe("paging across page boundaries: N+1 items with limit N give N and a cursor, the cursor the rest", () => {
  it("a session's log: every split point, an exact last page, and cursors past the end", async () => {
    const log = await allEvents(world.a.id);
    const n = log.length;
    expect(n).toBeGreaterThanOrEqual(4);
    expect(log.map((e) => e.seq)).toEqual(Array.from({ length: n }, (_, i) => i));
    const page = async (after: number, limit: number) => {
      const res = await api("GET", `/v1/sessions/${world.a.id}/events?after=${after}&limit=${limit}`);
      expect(res.status).toBe(200);
      return res.body as { events: WireEvent[]; next: number | null };
    };
    // N+1 events with limit N: N and a cursor at the N-th; the cursor gives the last one
    const first = await page(-1, n - 1);
    expect(first.events).toEqual(log.slice(0, n - 1));
    expect(first.next).toBe(n - 2);
    expect(await page(first.next!, n - 1)).toEqual({ events: log.slice(n - 1), next: null });
    // a page of exactly the remaining events has no cursor
    expect(await page(-1, n)).toEqual({ events: log, next: null });
    expect(await page(n - 3, 2)).toEqual({ events: log.slice(n - 2), next: null });
    // every page size walks the whole log: nothing twice, nothing missing
    for (let limit = 1; limit <= n; limit++) {
      const seen: WireEvent[] = [];
      let after = -1;
      for (let pages = 0; pages <= n; pages++) {
        const p = await page(after, limit);
        expect(p.events.length).toBe(Math.min(limit, n - seen.length));
        seen.push(...p.events);
        if (p.next === null) break;
        expect(p.next).toBe(p.events.at(-1)!.seq);
        after = p.next;
      }
      expect(seen).toEqual(log);
    }
    // past the end: the last seq, one past it, far past it
    for (const after of [n - 1, n, n + 1_000])
      expect(await page(after, 500)).toEqual({ events: [], next: null });
  });

  it("a log longer than the largest page: 500 and a cursor, then the rest", async () => {
    const res = await api("GET", `/v1/sessions/${world.long.id}/events?limit=500`);
    expect(res.status).toBe(200);
    expect(res.body.events).toHaveLength(500);
    expect(res.body.next).toBe(499);
    const rest = await api("GET", `/v1/sessions/${world.long.id}/events?after=499&limit=500`);
    expect(rest.status).toBe(200);
    expect(rest.body.next).toBeNull();
    const all = [...res.body.events, ...rest.body.events] as WireEvent[];
    expect(all.length).toBeGreaterThan(500);
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: all.length }, (_, i) => i));
    expect(all.filter((e) => e.type === "tool/result")).toHaveLength(500);
  });

  it("the registry's log: N+1 events with limit N, an exact last page, a cursor past the end", async () => {
    const full = await api("GET", "/v1/providers/events?limit=500");
    expect(full.body.next).toBeNull();
    const log = full.body.events as WireEvent[];
    const n = log.length;
    expect(n).toBeGreaterThanOrEqual(2); // spawn and fork, at least
    const first = await api("GET", `/v1/providers/events?limit=${n - 1}`);
    expect(first.body).toEqual({ events: log.slice(0, n - 1), next: log[n - 2]!.seq });
    const rest = await api("GET", `/v1/providers/events?after=${first.body.next}&limit=${n - 1}`);
    expect(rest.body).toEqual({ events: log.slice(n - 1), next: null });
    expect((await api("GET", `/v1/providers/events?limit=${n}`)).body).toEqual({ events: log, next: null });
    const past = await api("GET", `/v1/providers/events?after=${log[n - 1]!.seq}`);
    expect(past.body).toEqual({ events: [], next: null });
  });

  it("the session directory: 201 sessions read with limit 200, a zero-padded 100-character cursor, 101 refused", async () => {
    const asTenant = (query: string) => api("GET", `${sessionsPath}${query}`, { token: TENANT_ADMIN });
    const before = await asTenant("?limit=200");
    expect(before.body.next).toBeNull();
    const existing = before.body.sessions as { id: string; createdAt: number }[];
    const made: { id: string; createdAt: number }[] = [];
    while (existing.length + made.length < 201) {
      const batch = Math.min(10, 201 - existing.length - made.length);
      const answers = await Promise.all(
        Array.from({ length: batch }, () => api("POST", sessionsPath, { token: TENANT_ADMIN, body: {} })),
      );
      for (const res of answers) {
        expect(res.status).toBe(201);
        made.push({ id: res.body.id, createdAt: res.body.createdAt });
      }
    }
    // newest first, ties broken by id (descending)
    const expected = [...existing, ...made]
      .sort((x, y) => y.createdAt - x.createdAt || (y.id < x.id ? -1 : y.id > x.id ? 1 : 0))
      .map((s) => s.id);
    expect(expected).toHaveLength(201);

    const first = await asTenant("?limit=200");
    expect(first.status).toBe(200);
    const page = first.body.sessions as { id: string; createdAt: number }[];
    expect(page.map((s) => s.id)).toEqual(expected.slice(0, 200));
    const last = page.at(-1)!;
    expect(first.body.next).toBe(`${last.createdAt}.${last.id}`);
    const rest = await asTenant(`?limit=200&cursor=${encodeURIComponent(first.body.next)}`);
    expect(rest.body.sessions.map((s: { id: string }) => s.id)).toEqual(expected.slice(200));
    expect(rest.body.next).toBeNull();

    // the cursor at its length bound: the same cursor, its time zero-padded to 100 characters
    const padded = `${"0".repeat(100 - first.body.next.length)}${first.body.next}`;
    expect(padded).toHaveLength(100);
    expect((await asTenant(`?limit=200&cursor=${padded}`)).body).toEqual(rest.body);
    const registry = [registryStub()];
    const unchanged = await stateOf(registry);
    expectRefusal(await asTenant(`?limit=200&cursor=0${padded}`), invalid("cursor"));
    expectRefusal(await asTenant("?limit=201"), invalid("limit"));
    expect(await stateOf(registry)).toBe(unchanged);

    // past the end: the last entry's cursor, and a cursor older than every session
    const end = rest.body.sessions.at(-1) ?? last;
    expect((await asTenant(`?cursor=${end.createdAt}.${end.id}`)).body).toEqual({ sessions: [], next: null });
    expect((await asTenant(`?cursor=0.${end.id}`)).body).toEqual({ sessions: [], next: null });
  }, 120_000);
});

describe("a follow-up's content at and past its bound", () => {
  it("POST /v1/sessions/:id/subagents/:childId/messages content <= 1000 blocks: 1001 refused changing nothing, 1000 accepted", async () => {
    const parent = await createSession({ label: "bounds-followup" });
    const { childId } = await startChild(parent.id, { prompt: "hi", label: "bounded" });
    await settledTimes(parent.id, childId);
    await quiesce([parent.id, childId]);
    const path = `/v1/sessions/${parent.id}/subagents/${childId}/messages`;
    const objects = [stub(parent.id), stub(childId), registryStub()];
    const before = await stateOf(objects);
    expectRefusal(
      await api("POST", path, { body: { content: blocks(1001) } }),
      invalid("content", "invalid_union"),
    );
    expect(await stateOf(objects)).toBe(before);
    const accepted = await api("POST", path, { body: { content: blocks(1000) } });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    expect(await inboxContent(childId, accepted.body.messageId)).toEqual(blocks(1000));
  });
});

// ---------------------------------------------------------------- the A2A face

async function a2a(method: string, params: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const res = await workerFetch(
    new Request("http://example.com/v1/a2a", {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json", "A2A-Version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    }),
  );
  return { status: res.status, body: await res.json() };
}

const textParts = (n: number) => Array.from({ length: n }, (_, i) => ({ text: `b${i}` }));
const a2aMessage = (messageId: string, parts: unknown[]) => ({
  message: { messageId, role: "ROLE_USER", parts },
  configuration: { returnImmediately: true },
});
/** The session an A2A message without a task lands on (session-tasks.ts: keyed by its messageId). */
const a2aTaskId = async (messageId: string) => keyedId(`a2a:${await sha256Hex(messageId)}`);

describe("the A2A face: the same content cap as every other route, and its page size clamp", () => {
  it("POST /v1/a2a SendMessage parts <= 1000 blocks: 1001 parts are refused with a JSON-RPC error, and no task is made", async () => {
    const messageId = `bounds-${crypto.randomUUID()}`;
    const objects = [stub(await a2aTaskId(messageId)), registryStub()];
    const before = await stateOf(objects);
    const res = await a2a("SendMessage", a2aMessage(messageId, textParts(1001)));
    expect(res.status).toBe(200);
    expect(res.body.result, "1001 parts were accepted as a task").toBeUndefined();
    expect(res.body.error).toBeDefined();
    expect(await stateOf(objects)).toBe(before);
  });

  it("POST /v1/a2a SendMessage parts <= 1000 blocks: 1000 parts make a task whose message holds all 1000", async () => {
    const messageId = `bounds-${crypto.randomUUID()}`;
    const res = await a2a("SendMessage", a2aMessage(messageId, textParts(1000)));
    expect(res.status).toBe(200);
    const id = res.body.result?.task?.id;
    expect(id, JSON.stringify(res.body).slice(0, 300)).toBe(await a2aTaskId(messageId));
    const rows = await sqlRows(id, "SELECT content FROM inbox");
    expect(rows).toHaveLength(1);
    expect(JSON.parse(String(rows[0]!.content))).toEqual(blocks(1000));
  });

  it("POST /v1/a2a ListTasks pageSize is clamped to 1..50, never refused", async () => {
    // at least two tasks of the default tenant exist (the world's sessions and every probe)
    const one = await a2a("ListTasks", { pageSize: 1 });
    expect(one.body.result.pageSize).toBe(1);
    expect(one.body.result.tasks).toHaveLength(1);
    expect(one.body.result.nextPageToken).not.toBe("");
    for (const [asked, answered] of [
      [50, 50],
      [51, 50],
    ] as const) {
      const res = await a2a("ListTasks", { pageSize: asked });
      expect(res.body.error, JSON.stringify(res.body.error)).toBeUndefined();
      expect(res.body.result.pageSize).toBe(answered);
      expect(res.body.result.tasks.length).toBeLessThanOrEqual(50);
    }
  });
});

// ---------------------------------------------------------------- the children-per-session cap

describe("the children a session may start over its lifetime (MAX_CHILDREN_PER_SESSION = 1000 in wrangler.toml)", () => {
  it(`${START} the 1000th child is started; the 1001st is refused 422 BUDGET_EXCEEDED, and nothing changes`, async () => {
    const parent = await createSession({ label: "bounds-child-cap" });
    // 999 children already started (released rows, as settled one-shot children leave them)
    await runInDurableObject(stub(parent.id), (_i: unknown, state: DurableObjectState) => {
      useFirstUseTables(state.storage.sql);
      state.storage.transactionSync(() => {
        for (let i = 0; i < 999; i++)
          state.storage.sql.exec(
            "INSERT INTO children (child_id, provider, mode, label, created_at, state) VALUES (?, 'spawn', 'one-shot', NULL, ?, 'released')",
            crypto.randomUUID(),
            i,
          );
      });
    });
    await evict(parent.id); // the rows were written behind the live instance: a restart reads them
    const start = (childId: string) =>
      api("POST", subagentsOf(parent.id), {
        body: { provider: "spawn", mode: "one-shot", prompt: "hi", childId },
      });
    const thousandth = crypto.randomUUID();
    const accepted = await start(thousandth);
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    expect(accepted.body.id).toBe(reservedId(parent.id, thousandth));
    await waitForRun(parent.id, accepted.body.runId);
    await waitForEvents(parent.id, (log) => log.some((e) => e.type === "subagent/end"));
    await quiesce([parent.id, accepted.body.id]);
    const [{ n }] = (await sqlRows(parent.id, "SELECT count(*) AS n FROM children")) as [{ n: number }];
    expect(n).toBe(1000);

    const over = crypto.randomUUID();
    const objects = [
      stub(parent.id),
      stub(accepted.body.id),
      stub(reservedId(parent.id, over)),
      registryStub(),
    ];
    const before = await stateOf(objects);
    expectRefusal(await start(over), {
      status: 422,
      code: "BUDGET_EXCEEDED",
      issue: null,
      message: /^this session already started 1000 children \(MAX_CHILDREN_PER_SESSION\)$/,
    });
    expect(await stateOf(objects)).toBe(before);
  }, 60_000);
});

// ---------------------------------------------------------------- the MCP face's tool arguments

/** One `tools/call` to a session's MCP face (`POST /v1/sessions/:id/mcp`); the JSON-RPC answer. */
async function mcpCall(id: string, name: string, args: Record<string, unknown>): Promise<any> {
  const res = await postJsonRpc(
    mcpPath(id),
    JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  );
  expect(res.status).toBe(200);
  return jsonRpcAnswer(res);
}

const resultText = (answer: any): string =>
  ((answer?.result?.content ?? []) as { text?: string }[]).map((c) => c.text ?? "").join("");

interface ToolBound {
  tool: string;
  /** The field and its limit. */
  limit: string;
  field: string;
  at: Record<string, unknown>;
  past: Record<string, unknown>;
  /** `Too big` or `Too small`: the validator's words for the side of the bound. */
  side: "Too big" | "Too small";
}

const TOOL_BOUNDS: ToolBound[] = [
  {
    tool: "echo",
    limit: "text <= 65,536 characters",
    field: "text",
    at: { text: chars(65_536) },
    past: { text: chars(65_537) },
    side: "Too big",
  },
  {
    tool: "subagent",
    limit: "description <= 200 characters",
    field: "description",
    at: { description: chars(200, "d"), prompt: "p", run_in_background: true },
    past: { description: chars(201, "d"), prompt: "p", run_in_background: true },
    side: "Too big",
  },
  {
    tool: "subagent",
    limit: "description >= 1 character",
    field: "description",
    at: { description: "d", prompt: "p", run_in_background: true },
    past: { description: "", prompt: "p", run_in_background: true },
    side: "Too small",
  },
  {
    tool: "subagent",
    limit: "prompt <= 200,000 characters",
    field: "prompt",
    at: { description: "d", prompt: chars(200_000, "p"), run_in_background: true },
    past: { description: "d", prompt: chars(200_001, "p"), run_in_background: true },
    side: "Too big",
  },
  {
    tool: "send_message",
    limit: "subagent_id <= 128 characters",
    field: "subagent_id",
    at: { subagent_id: chars(128, "c"), message: "m" },
    past: { subagent_id: chars(129, "c"), message: "m" },
    side: "Too big",
  },
  {
    tool: "send_message",
    limit: "message <= 200,000 characters",
    field: "message",
    at: { subagent_id: "c", message: chars(200_000, "m") },
    past: { subagent_id: "c", message: chars(200_001, "m") },
    side: "Too big",
  },
  {
    tool: "interrupt_agent",
    limit: "agent_id <= 128 characters",
    field: "agent_id",
    at: { agent_id: chars(128, "a") },
    past: { agent_id: chars(129, "a") },
    side: "Too big",
  },
  {
    tool: "task_output",
    limit: "task_id <= 64 characters",
    field: "task_id",
    at: { task_id: chars(64, "t") },
    past: { task_id: chars(65, "t") },
    side: "Too big",
  },
  {
    tool: "task_kill",
    limit: "task_id <= 64 characters",
    field: "task_id",
    at: { task_id: chars(64, "t") },
    past: { task_id: chars(65, "t") },
    side: "Too big",
  },
  {
    tool: "task_kill",
    limit: "reason <= 500 characters",
    field: "reason",
    at: { task_id: "t", reason: chars(500, "r") },
    past: { task_id: "t", reason: chars(501, "r") },
    side: "Too big",
  },
];

describe("the MCP face (POST /v1/sessions/:id/mcp): tool arguments at their bound run, one past them are refused and change nothing", () => {
  for (const b of TOOL_BOUNDS) {
    it(`${b.tool} ${b.limit}: one past is an input validation error, nothing logged or stored`, async () => {
      const s = await createSession({ label: "bounds-mcp" });
      const objects = [stub(s.id), registryStub()];
      const before = await stateOf(objects);
      const answer = await mcpCall(s.id, b.tool, b.past);
      expect(answer.result?.isError).toBe(true);
      expect(resultText(answer)).toMatch(
        new RegExp(`^Input validation error: Invalid arguments for tool ${b.tool}: ${b.field}: ${b.side}`),
      );
      expect(await stateOf(objects)).toBe(before);
    });

    it(`${b.tool} ${b.limit}: at the bound the tool runs with the argument whole`, async () => {
      const s = await createSession({ label: "bounds-mcp" });
      const answer = await mcpCall(s.id, b.tool, b.at);
      expect(resultText(answer)).not.toMatch(/^Input validation error/);
      const calls = (await allEvents(s.id)).filter((e) => e.type === "mcp/call");
      expect(calls.map((e) => ({ name: e.data.name, args: e.data.args }))).toEqual([
        { name: b.tool, args: b.at },
      ]);
      if (b.tool === "echo") expect(answer.result).toEqual({ content: [{ type: "text", text: b.at.text }] });
    });
  }
});
