import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, api, createSession, sendMessage, workerFetch } from "../../../support/api";
import { waitForTurnEnds } from "../../../support/logs";
import { dumpTables, hashOf, registryStub, tablesHash } from "../../../support/objects";

/**
 * Bad input to the A2A face (`POST /v1/a2a`): every case is answered with the protocol's own
 * refusal (HTTP 401/403/413 before any JSON-RPC is read, else a JSON-RPC error in a 200), never
 * a 5xx, and changes nothing: the registry's tables (the session directory), an existing task's
 * tables and the tenant's session list hash the same before and after.
 */

interface Case {
  name: string;
  /** The request body (a string is sent as is). */
  body: unknown;
  headers?: Record<string, string>;
  token?: string | null;
  /** HTTP status, and for a 200 the JSON-RPC error code (or a message pattern). */
  status: number;
  rpc?: number | RegExp;
}

function nested(depth: number): unknown {
  let value: unknown = { text: "deep" };
  for (let i = 0; i < depth; i++) value = { parts: [value] };
  return value;
}

const V1 = { "A2A-Version": "1.0" };
let task = "";

const CASES: Case[] = [
  { name: "no token", body: {}, token: null, status: 401 },
  { name: "a token that is no token", body: {}, token: "nope", status: 401 },
  { name: "a body over 256 KiB", body: "x".repeat(256 * 1024 + 1), status: 413 },
  { name: "a body that is not JSON", body: "{not json", headers: V1, status: 200, rpc: -32700 },
  {
    name: "a JSON-RPC request without a method",
    body: { jsonrpc: "2.0", id: 1 },
    headers: V1,
    status: 200,
    rpc: /invalid|malformed/i,
  },
  {
    name: "an unknown method",
    body: { jsonrpc: "2.0", id: 1, method: "Nope", params: {} },
    headers: V1,
    status: 200,
    rpc: -32601,
  },
  {
    name: "SendMessage without a message",
    body: { jsonrpc: "2.0", id: 1, method: "SendMessage", params: {} },
    headers: V1,
    status: 200,
    rpc: /messageId is required/,
  },
  {
    name: "SendMessage with no parts",
    body: {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: { message: { messageId: "m-empty", role: "ROLE_USER", parts: [] } },
    },
    headers: V1,
    status: 200,
    rpc: /parts is empty/,
  },
  {
    name: "SendMessage with a file part",
    body: {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: {
        message: {
          messageId: "m-file",
          role: "ROLE_USER",
          parts: [{ url: "https://x/y.png", mediaType: "image/png" }],
        },
      },
    },
    headers: V1,
    status: 200,
    rpc: /not supported/,
  },
  {
    name: "SendMessage to a task that does not exist",
    body: {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: {
        message: {
          messageId: "m-ghost",
          taskId: crypto.randomUUID(),
          role: "ROLE_USER",
          parts: [{ text: "x" }],
        },
      },
    },
    headers: V1,
    status: 200,
    rpc: /not found/,
  },
  {
    name: "SendMessage whose task and context ids differ",
    body: () => ({
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: {
        message: {
          messageId: "m-two",
          taskId: task,
          contextId: crypto.randomUUID(),
          role: "ROLE_USER",
          parts: [{ text: "x" }],
        },
      },
    }),
    headers: V1,
    status: 200,
    rpc: /different tasks/,
  },
  {
    name: "SendMessage asking for push notifications",
    body: {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: {
        message: { messageId: "m-push", role: "ROLE_USER", parts: [{ text: "x" }] },
        configuration: { taskPushNotificationConfig: { url: "https://hook.example/a" } },
      },
    },
    headers: V1,
    status: 200,
    rpc: /push notifications/,
  },
  {
    name: "GetTask of an id that is no session",
    body: { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "not-a-session" } },
    headers: V1,
    status: 200,
    rpc: /not found/,
  },
  {
    name: "CancelTask of a task that does not exist",
    body: { jsonrpc: "2.0", id: 1, method: "CancelTask", params: { id: crypto.randomUUID() } },
    headers: V1,
    status: 200,
    rpc: /not found/,
  },
  {
    name: "CancelTask of a finished task",
    body: () => ({ jsonrpc: "2.0", id: 1, method: "CancelTask", params: { id: task } }),
    headers: V1,
    status: 200,
    rpc: /already completed/,
  },
  {
    name: "ListTasks with a page token from nowhere",
    body: { jsonrpc: "2.0", id: 1, method: "ListTasks", params: { pageToken: "garbage" } },
    headers: V1,
    status: 200,
    rpc: /pageToken/,
  },
  {
    name: "a push notification config",
    body: {
      jsonrpc: "2.0",
      id: 1,
      method: "CreateTaskPushNotificationConfig",
      params: { taskId: "t", url: "https://hook.example/b" },
    },
    headers: V1,
    status: 200,
    rpc: /push notifications|not supported/i,
  },
  {
    name: "an A2A version this agent does not speak",
    body: { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } },
    headers: { "A2A-Version": "9.9" },
    status: 200,
    rpc: /version/i,
  },
  {
    name: "a 0.3 method with bad params",
    body: { jsonrpc: "2.0", id: 1, method: "message/send", params: { message: "not a message" } },
    status: 200,
    rpc: /./,
  },
  {
    name: "a message nested 10,000 levels deep",
    body: {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: { message: { messageId: "m-deep", role: "ROLE_USER", parts: [{ data: nested(10_000) }] } },
    },
    headers: V1,
    status: 200,
    rpc: /nests deeper than 128 levels/,
  },
];

async function state(): Promise<string> {
  const listed = await api("GET", "/v1/sessions?limit=200");
  return hashOf([await dumpTables(registryStub()), await tablesHash(task), listed.body]);
}

describe("bad input to the A2A face is refused by the protocol and changes nothing", () => {
  beforeAll(async () => {
    const made = await createSession({ label: "an existing task" });
    task = made.id;
    await sendMessage(task, "done before");
    await waitForTurnEnds(task, 1);
  });

  it("covers at least 20 distinct bad inputs", () => {
    expect(new Set(CASES.map((c) => c.name)).size).toBe(CASES.length);
    expect(CASES.length).toBeGreaterThanOrEqual(20);
  });

  for (const c of CASES) {
    it(`answers ${c.status} to ${c.name}, and nothing changes`, async () => {
      const before = await state();
      const headers = new Headers({ "content-type": "application/json", ...c.headers });
      const token = c.token === undefined ? ADMIN : c.token;
      if (token !== null) headers.set("authorization", `Bearer ${token}`);
      const body = typeof c.body === "function" ? (c.body as () => unknown)() : c.body;
      const response = await workerFetch(
        new Request("http://example.com/v1/a2a", {
          method: "POST",
          headers,
          body: typeof body === "string" ? body : JSON.stringify(body),
        }),
      );
      expect(response.status).toBe(c.status);
      const answer = (await response.json()) as { error?: { code?: number | string; message?: string } };
      if (c.status === 200) {
        expect(answer.error, JSON.stringify(answer)).toBeDefined();
        if (typeof c.rpc === "number") expect(answer.error!.code).toBe(c.rpc);
        else expect(`${answer.error!.message}`).toMatch(c.rpc!);
      } else expect(typeof answer.error?.code).toBe("string"); // the API's own error envelope
      expect(await state()).toBe(before);
    });
  }
});
