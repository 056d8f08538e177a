import { beforeAll, describe, expect, it } from "vitest";
import {
  api,
  type ApiResult,
  type CallOptions,
  createSession,
  fetchWorker,
  field,
  openStream,
  rawBody,
  readResult,
  sendMessage,
} from "../../../support/api";
import { waitForTurnEnds } from "../../../support/logs";
import { dumpTables, tablesHash } from "../../../support/objects";

/** The documented status of every transport code a bad input may answer with (api.md). */
const STATUS_OF_CODE: Record<string, number> = {
  MALFORMED_JSON: 400,
  INVALID_REQUEST: 400,
  UNAUTHENTICATED: 401,
  UNAUTHORIZED: 403,
  NOT_FOUND: 404,
  PAYLOAD_TOO_LARGE: 413,
};

interface Session {
  id: string;
  token: string;
}

interface BadInput {
  name: string;
  status: number;
  code: string;
  /** Sends the bad input against session `a` (and possibly `b`). */
  run(a: Session, b: Session): Promise<ApiResult>;
  /** A known runtime bug makes this case fail today (the test is kept as `it.fails`). */
  bug?: string;
}

const messagesPath = (s: Session): string => `/v1/sessions/${s.id}/messages`;
const eventsPath = (s: Session, query: string): string => `/v1/sessions/${s.id}/events${query}`;

function post(path: (s: Session) => string, options: CallOptions): BadInput["run"] {
  return (a) => api("POST", path(a), options);
}

/** A body stream with no declared length, `bytes` long. */
function streamOf(bytes: number): ReadableStream<Uint8Array> {
  const chunk = new TextEncoder().encode("x".repeat(16 * 1024));
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes) {
        controller.close();
        return;
      }
      controller.enqueue(chunk);
      sent += chunk.byteLength;
    },
  });
}

const OVERSIZED = JSON.stringify({ content: "x".repeat(256 * 1024 + 1) });
const MISSING_SESSION = "00000000-0000-4000-8000-000000000000";
const approvalPath = (s: Session): string => `/v1/sessions/${s.id}/approvals/${MISSING_SESSION}`;

const BAD_INPUTS: BadInput[] = [
  // ---- bodies of POST /messages ----
  {
    name: "truncated JSON",
    status: 400,
    code: "MALFORMED_JSON",
    run: post(messagesPath, rawBody('{"content": "hi"')),
  },
  {
    name: "JSON with NaN",
    status: 400,
    code: "MALFORMED_JSON",
    run: post(messagesPath, rawBody('{"content": NaN}')),
  },
  {
    name: "single-quoted JSON",
    status: 400,
    code: "MALFORMED_JSON",
    run: post(messagesPath, rawBody("{'content': 'hi'}")),
  },
  {
    name: "a JSON body sent as text/plain",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, rawBody('{"content":"hi"}', "text/plain")),
  },
  {
    name: "a JSON body with no content-type",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) =>
      fetchWorker(
        new Request(`http://example.com${messagesPath(a)}`, {
          method: "POST",
          headers: { authorization: "Bearer test-admin-token" },
          body: new TextEncoder().encode('{"content":"hi"}'),
        }),
      ),
  },
  {
    name: "a form-encoded body",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, rawBody("content=hi", "application/x-www-form-urlencoded")),
  },
  { name: "an empty body", status: 400, code: "INVALID_REQUEST", run: post(messagesPath, {}) },
  { name: "an empty object", status: 400, code: "INVALID_REQUEST", run: post(messagesPath, { body: {} }) },
  {
    name: "an unknown field",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: "hi", priority: "high" } }),
  },
  {
    name: "content as a number",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: 42 } }),
  },
  {
    name: "content null",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: null } }),
  },
  {
    name: "content as an object",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: { text: "hi" } } }),
  },
  {
    name: "content as an array of strings",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: ["hi"] } }),
  },
  {
    name: "a content block of an unknown type",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: [{ type: "image", url: "https://example.com/x.png" }] } }),
  },
  {
    name: "a content block without text",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: [{ type: "text" }] } }),
  },
  {
    name: "a content block with an extra key",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: [{ type: "text", text: "hi", cache: true }] } }),
  },
  {
    name: "more than 1000 content blocks",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, {
      body: { content: Array.from({ length: 1001 }, () => ({ type: "text", text: "" })) },
    }),
  },
  {
    name: "deeply nested content (10,000 levels)",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, rawBody(`{"content":${"[".repeat(10_000)}${"]".repeat(10_000)}}`)),
  },
  {
    name: "a JSON array body",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: [{ content: "hi" }] }),
  },
  {
    name: "a JSON string body",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: "hi" }),
  },
  {
    name: "an empty idempotencyKey",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: "hi", idempotencyKey: "" } }),
  },
  {
    name: "a numeric idempotencyKey",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: "hi", idempotencyKey: 7 } }),
  },
  {
    name: "an idempotencyKey over 200 characters",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: "hi", idempotencyKey: "k".repeat(201) } }),
  },
  {
    name: "a body over 256 KiB",
    status: 413,
    code: "PAYLOAD_TOO_LARGE",
    run: post(messagesPath, rawBody(OVERSIZED)),
  },
  {
    name: "a body over 256 KiB with no declared length",
    status: 413,
    code: "PAYLOAD_TOO_LARGE",
    run: (a) =>
      fetchWorker(
        new Request(`http://example.com${messagesPath(a)}`, {
          method: "POST",
          headers: { authorization: "Bearer test-admin-token", "content-type": "application/json" },
          body: streamOf(300 * 1024),
        }),
      ),
  },
  // ---- ids and routes ----
  {
    name: "a session id that is not a UUID",
    status: 404,
    code: "NOT_FOUND",
    run: () => api("POST", "/v1/sessions/not-a-uuid/messages", { body: { content: "hi" } }),
  },
  {
    name: "a session id with a path-traversal suffix",
    status: 404,
    code: "NOT_FOUND",
    run: (a) => api("GET", `/v1/sessions/${a.id}%2F..%2F..%2Fhealth`),
  },
  {
    name: "a UUID of a session that does not exist",
    status: 404,
    code: "NOT_FOUND",
    run: () => api("POST", `/v1/sessions/${MISSING_SESSION}/messages`, { body: { content: "hi" } }),
  },
  { name: "an unknown route", status: 404, code: "NOT_FOUND", run: () => api("GET", "/v1/nothing-here") },
  {
    name: "an unknown sub-route of a session",
    status: 404,
    code: "NOT_FOUND",
    run: (a) => api("POST", `/v1/sessions/${a.id}/internal/create`, { body: {} }),
  },
  {
    name: "an unsupported method on a session",
    status: 404,
    code: "NOT_FOUND",
    run: (a) => api("PATCH", `/v1/sessions/${a.id}`, { body: {} }),
  },
  // ---- steering, scheduled messages, schedules, deletion (README "Steering, deadlines and schedules") ----
  {
    name: "a delivery that is not one of the three",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: "hi", delivery: "soon" } }),
  },
  {
    name: "a notBefore more than a year ahead",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: "hi", notBefore: Date.now() + 400 * 86_400_000 } }),
  },
  {
    name: "a notBefore that is not an integer",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(messagesPath, { body: { content: "hi", notBefore: "tomorrow" } }),
  },
  {
    name: "a schedule with six cron fields",
    status: 400,
    code: "INVALID_REQUEST",
    run: post((s) => `/v1/sessions/${s.id}/schedules`, { body: { cron: "0 * * * * *", content: "x" } }),
  },
  {
    name: "a schedule in a time zone that does not exist",
    status: 400,
    code: "INVALID_REQUEST",
    run: post((s) => `/v1/sessions/${s.id}/schedules`, {
      body: { cron: "0 9 * * *", content: "x", timezone: "Europe/Atlantis" },
    }),
  },
  {
    name: "a schedule without content",
    status: 400,
    code: "INVALID_REQUEST",
    run: post((s) => `/v1/sessions/${s.id}/schedules`, { body: { cron: "0 9 * * *" } }),
  },
  {
    name: "a schedule id that the runtime never makes",
    status: 404,
    code: "NOT_FOUND",
    run: (a) => api("DELETE", `/v1/sessions/${a.id}/schedules/sch_not-one`),
  },
  {
    name: "a well-formed schedule id that names no schedule or held message",
    status: 404,
    code: "NOT_FOUND",
    run: (a) => api("DELETE", `/v1/sessions/${a.id}/schedules/sch_00000000-0000-4000-8000-000000000000`),
  },
  {
    name: "a held message named by its message id instead of its schedule id",
    status: 404,
    code: "NOT_FOUND",
    run: (a) => api("DELETE", `/v1/sessions/${a.id}/schedules/msg_00000000-0000-4000-8000-000000000000`),
  },
  {
    name: "another session's schedule deleted with a session's token",
    status: 404,
    code: "NOT_FOUND",
    run: (a, b) =>
      api("DELETE", `/v1/sessions/${b.id}/schedules/sch_00000000-0000-4000-8000-000000000000`, {
        token: a.token,
      }),
  },
  {
    name: "a schedule of another session's path",
    status: 404,
    code: "NOT_FOUND",
    run: (a, b) =>
      api("POST", `/v1/sessions/${b.id}/schedules`, {
        token: a.token,
        body: { cron: "0 9 * * *", content: "x" },
      }),
  },
  {
    name: "a top-level session deleted with its own token",
    status: 403,
    code: "UNAUTHORIZED",
    run: (a) => api("DELETE", `/v1/sessions/${a.id}`, { token: a.token }),
  },
  {
    name: "a session deleted with another session's token",
    status: 404,
    code: "NOT_FOUND",
    run: (a, b) => api("DELETE", `/v1/sessions/${b.id}`, { token: a.token }),
  },
  // ---- decisions of approvals (README "Approvals") ----
  {
    name: "an approval's scope as a number",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(approvalPath, { body: { decision: "approve", scope: 1 } }),
  },
  {
    name: "an approval's scope that is neither once nor always",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(approvalPath, { body: { decision: "approve", scope: "forever" } }),
  },
  {
    name: "an approval's scope null",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(approvalPath, { body: { decision: "deny", scope: null } }),
  },
  {
    name: "an approval's scope in upper case",
    status: 400,
    code: "INVALID_REQUEST",
    run: post(approvalPath, { body: { decision: "approve", scope: "ALWAYS" } }),
  },
  {
    name: "a scope always for an approval that does not exist",
    status: 404,
    code: "NOT_FOUND",
    run: post(approvalPath, { body: { decision: "approve", scope: "always" } }),
  },
  // ---- trace paging ----
  {
    name: "trace cursor no page gave",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", `/v1/sessions/${a.id}/trace?cursor=s5.2`),
  },
  {
    name: "trace cursor empty",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", `/v1/sessions/${a.id}/trace?cursor=`),
  },
  {
    name: "trace cursor past 400 characters",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", `/v1/sessions/${a.id}/trace?cursor=${"c0/".repeat(140)}s0.-1`),
  },
  {
    name: "trace with an unknown parameter",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", `/v1/sessions/${a.id}/trace?after=3`),
  },
  // ---- event paging ----
  {
    name: "after=-2",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", eventsPath(a, "?after=-2")),
  },
  {
    name: "after=abc",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", eventsPath(a, "?after=abc")),
  },
  {
    name: "after empty",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", eventsPath(a, "?after=")),
  },
  {
    name: "after=1e3",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", eventsPath(a, "?after=1e3")),
  },
  {
    name: "limit=0",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", eventsPath(a, "?limit=0")),
  },
  {
    name: "limit=501",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", eventsPath(a, "?limit=501")),
  },
  {
    name: "limit=1.5",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", eventsPath(a, "?limit=1.5")),
  },
  {
    name: "limit=-1",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", eventsPath(a, "?limit=-1")),
  },
  {
    name: "an unknown query parameter",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", eventsPath(a, "?after=0&order=desc")),
  },
  // ---- auth ----
  {
    name: "a missing token",
    status: 401,
    code: "UNAUTHENTICATED",
    run: post(messagesPath, { token: null, body: { content: "hi" } }),
  },
  {
    name: "a wrong token",
    status: 401,
    code: "UNAUTHENTICATED",
    run: post(messagesPath, { token: "not-the-admin-token", body: { content: "hi" } }),
  },
  {
    name: "the session's id with a wrong secret",
    status: 401,
    code: "UNAUTHENTICATED",
    run: (a) =>
      api("POST", messagesPath(a), { token: `${a.id}.wrong-secret-wrong-secret`, body: { content: "hi" } }),
  },
  {
    name: "a Basic authorization header",
    status: 401,
    code: "UNAUTHENTICATED",
    run: post(messagesPath, {
      token: null,
      headers: { authorization: "Basic dGVzdDp0ZXN0" },
      body: { content: "hi" },
    }),
  },
  {
    name: "a token passed in the query string",
    status: 401,
    code: "UNAUTHENTICATED",
    run: (a) => api("GET", eventsPath(a, "?token=test-admin-token"), { token: null }),
  },
  {
    name: "another session's token sending a message",
    status: 404,
    code: "NOT_FOUND",
    run: (a, b) => api("POST", messagesPath(a), { token: b.token, body: { content: "hi" } }),
  },
  {
    name: "another session's token interrupting",
    status: 404,
    code: "NOT_FOUND",
    run: (a, b) => api("POST", `/v1/sessions/${a.id}/interrupt`, { token: b.token }),
  },
  {
    name: "another session's token compacting",
    status: 404,
    code: "NOT_FOUND",
    run: (a, b) => api("POST", `/v1/sessions/${a.id}/compact`, { token: b.token }),
  },
  {
    name: "a compaction request with a field",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("POST", `/v1/sessions/${a.id}/compact`, { body: { trigger: "request" } }),
  },
  {
    name: "another session's token reading events",
    status: 404,
    code: "NOT_FOUND",
    run: (a, b) => api("GET", eventsPath(a, ""), { token: b.token }),
  },
  {
    name: "a session token on the admin-only create route",
    status: 403,
    code: "UNAUTHORIZED",
    run: (a) => api("POST", "/v1/sessions", { token: a.token, body: {} }),
  },
  // ---- the event stream ----
  {
    name: "the event stream without a WebSocket upgrade",
    status: 400,
    code: "INVALID_REQUEST",
    run: (a) => api("GET", `/v1/sessions/${a.id}/events/stream`),
  },
  {
    name: "the event stream with after=NaN",
    status: 400,
    code: "INVALID_REQUEST",
    run: async (a) => asResult(await openStream(a.id, { after: Number.NaN })),
  },
  {
    name: "the event stream with another session's token",
    status: 404,
    code: "NOT_FOUND",
    run: async (a, b) => asResult(await openStream(a.id, { token: b.token })),
  },
  {
    name: "the event stream with the session's id and a wrong secret",
    status: 401,
    code: "UNAUTHENTICATED",
    run: async (a) => asResult(await openStream(a.id, { token: `${a.id}.wrong-secret-wrong-secret` })),
  },
  {
    name: "the event stream with no token",
    status: 401,
    code: "UNAUTHENTICATED",
    run: async (a) => asResult(await openStream(a.id, { token: null })),
  },
];

/** The answer to a stream upgrade as an API result (a socket, if one was opened, is closed). */
async function asResult(response: Response): Promise<ApiResult> {
  response.webSocket?.accept();
  response.webSocket?.close(1000, "test");
  return readResult(response);
}

describe("bad inputs are refused with a documented 4xx and change nothing (semantics.md §13)", () => {
  let a: Session;
  let b: Session;

  beforeAll(async () => {
    a = await createSession({ label: "target" });
    b = await createSession({ label: "other" });
    // give the target a history, then let it go idle so its tables are stable
    await sendMessage(a.id, "history");
    await sendMessage(b.id, "history");
    await waitForTurnEnds(a.id, 1);
    await waitForTurnEnds(b.id, 1);
  });

  it("covers at least 25 distinct bad inputs", () => {
    expect(new Set(BAD_INPUTS.map((c) => c.name)).size).toBe(BAD_INPUTS.length);
    expect(BAD_INPUTS.length).toBeGreaterThanOrEqual(25);
  });

  for (const input of BAD_INPUTS) {
    const test = input.bug === undefined ? it : it.fails;
    test(`answers ${input.status} ${input.code} to ${input.name} and leaves every table unchanged`, async () => {
      const before = [await tablesHash(a.id), await tablesHash(b.id)];
      const res = await input.run(a, b);
      expect(res.status).toBeLessThan(500);
      expect(res.status).toBe(input.status);
      expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/);
      const error = field<Record<string, unknown>>(res.body, "error");
      expect(error).toBeTypeOf("object");
      expect(error.code).toBe(input.code);
      expect(STATUS_OF_CODE[input.code]).toBe(res.status);
      expect(typeof error.message).toBe("string");
      expect(String(error.message).length).toBeGreaterThan(0);
      expect([await tablesHash(a.id), await tablesHash(b.id)]).toEqual(before);
    });
  }

  it("accepts a body of exactly 256 KiB and refuses one byte more with 413", async () => {
    const limit = 256 * 1024;
    const fitting = JSON.stringify({ content: "y".repeat(limit - '{"content":""}'.length) });
    expect(new TextEncoder().encode(fitting).byteLength).toBe(limit);
    const over = JSON.stringify({ content: "y".repeat(limit + 1 - '{"content":""}'.length) });
    const before = await tablesHash(b.id);
    const refused = await api("POST", messagesPath(b), rawBody(over));
    expect(refused.status).toBe(413);
    expect(field(refused.body, "error", "code")).toBe("PAYLOAD_TOO_LARGE");
    expect(await tablesHash(b.id)).toBe(before);
    const accepted = await api("POST", messagesPath(b), rawBody(fitting));
    expect(accepted.status).toBe(202);
    await waitForTurnEnds(b.id, 2);
  });

  it("stores nothing in the object of a session id that was never created", async () => {
    await api("POST", `/v1/sessions/${MISSING_SESSION}/messages`, { body: { content: "hi" } });
    await api("GET", `/v1/sessions/${MISSING_SESSION}`);
    await api("GET", `/v1/sessions/${MISSING_SESSION}/events`);
    await api("POST", `/v1/sessions/${MISSING_SESSION}/interrupt`);
    expect(await dumpTables(MISSING_SESSION)).toEqual({});
  });
});
