import { Role, TaskState } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { asTask, connect, send, texts, userMessage } from "../../support/a2a-client";
import { ADMIN, api, createSession, TENANT_ADMIN, workerFetch } from "../../support/api";
import { LONG_TURN, script } from "../../support/scripts";

/**
 * The A2A face (docs/semantics.md §16): the agent card and its JSON-RPC endpoint, driven by the
 * official A2A SDK's own client (`@a2a-js/sdk/client`), and by raw JSON-RPC for the 0.3 method
 * names and for refusals.
 */

/** A ListTasks request for every task of the caller, on one page. */
const EVERY_TASK = {
  tenant: "",
  contextId: "",
  status: TaskState.TASK_STATE_UNSPECIFIED,
  pageSize: 100,
  pageToken: "",
  historyLength: undefined,
  statusTimestampAfter: undefined,
  includeArtifacts: undefined,
};

/** One raw JSON-RPC POST to the endpoint. */
async function rpc(body: unknown, token: string | null = ADMIN, headers: Record<string, string> = {}) {
  const init = new Headers({ "content-type": "application/json", ...headers });
  if (token) init.set("authorization", `Bearer ${token}`);
  return workerFetch(
    new Request("http://example.com/v1/a2a", {
      method: "POST",
      headers: init,
      body: typeof body === "string" ? body : JSON.stringify(body),
    }),
  );
}

async function sessionCount(token = ADMIN): Promise<number> {
  const listed = await api("GET", "/v1/sessions?limit=200", { token });
  return (listed.body as { sessions: unknown[] }).sessions.length;
}

describe("the A2A agent card", () => {
  it("names the JSON-RPC endpoint (from PUBLIC_URL), streaming and a bearer scheme", async () => {
    const response = await workerFetch(new Request("http://example.com/.well-known/agent-card.json"));
    expect(response.status).toBe(200);
    const card = (await response.json()) as any;
    expect(card.supportedInterfaces[0]).toMatchObject({
      url: "https://parent.test/v1/a2a",
      protocolBinding: "JSONRPC",
      protocolVersion: "1.0",
    });
    expect(card.supportedInterfaces.map((i: any) => i.protocolVersion)).toEqual(["1.0", "0.3"]);
    expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: false });
    expect(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe("Bearer");
    expect(Object.keys(card.securityRequirements[0].schemes)).toEqual(["bearer"]);
    expect(card.skills.length).toBeGreaterThan(0);
  });
});

describe("A2A tasks are sessions (the SDK's client)", () => {
  it("a message without a task makes a session; its final answer is the task's result", async () => {
    const client = await connect();
    const task = asTask(await client.sendMessage(send(userMessage("hello over a2a"))));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(texts(task.status?.message?.parts)).toBe("echo: hello over a2a");
    expect(task.artifacts.map((a) => texts(a.parts))).toEqual(["echo: hello over a2a"]);
    expect(task.contextId).toBe(task.id);
    expect(task.history.map((m) => [m.role, texts(m.parts)])).toEqual([
      [Role.ROLE_USER, "hello over a2a"],
      [Role.ROLE_AGENT, "echo: hello over a2a"],
    ]);
    // the task is an ordinary session of the caller's tenant, with the default model
    const session = await api("GET", `/v1/sessions/${task.id}`);
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({ id: task.id, model: "scripted", parentSession: null });
  });

  it("a follow-up on the task continues the same session; a retried message is not sent twice", async () => {
    const client = await connect();
    const first = asTask(await client.sendMessage(send(userMessage("one"))));
    const followup = userMessage("two", first.id);
    const second = asTask(await client.sendMessage(send(followup)));
    expect(second.id).toBe(first.id);
    expect(texts(second.status?.message?.parts)).toBe("echo: two");
    expect(second.artifacts.map((a) => texts(a.parts))).toEqual(["echo: one", "echo: two"]);
    const again = asTask(await client.sendMessage(send(followup)));
    expect(again.history.map((m) => texts(m.parts))).toEqual(["one", "echo: one", "two", "echo: two"]);
    // the context id continues it as well
    const byContext = userMessage("three");
    byContext.contextId = first.id;
    expect(asTask(await client.sendMessage(send(byContext))).artifacts).toHaveLength(3);
  });

  it("the same first message again is the same task (a retried create makes no second session)", async () => {
    const client = await connect();
    const message = userMessage("only once");
    const before = await sessionCount();
    const first = asTask(await client.sendMessage(send(message)));
    const second = asTask(await client.sendMessage(send(message)));
    expect(second.id).toBe(first.id);
    expect(second.history).toHaveLength(2);
    expect(await sessionCount()).toBe(before + 1);
  });

  it("reads, streams and cancels a long task", async () => {
    const client = await connect();
    const started = asTask(await client.sendMessage(send(userMessage(LONG_TURN), true)));
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(started.status?.state);
    const read = await client.getTask({ tenant: "", id: started.id, historyLength: undefined });
    expect(read.id).toBe(started.id);
    expect(read.status?.state).not.toBe(TaskState.TASK_STATE_COMPLETED);
    const canceled = await client.cancelTask({ tenant: "", id: started.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    // a finished task cannot be canceled again
    await expect(client.cancelTask({ tenant: "", id: started.id, metadata: undefined })).rejects.toThrow(
      /already canceled/,
    );
  });

  it("a task whose latest message is queued behind a running turn is not cancelable yet", async () => {
    const client = await connect();
    const started = asTask(await client.sendMessage(send(userMessage(LONG_TURN), true)));
    const queued = asTask(await client.sendMessage(send(userMessage("after that", started.id), true)));
    expect(queued.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    await expect(client.cancelTask({ tenant: "", id: started.id, metadata: undefined })).rejects.toThrow(
      /queued behind another turn/,
    );
    await api("POST", `/v1/sessions/${started.id}/interrupt`);
  });

  it("streams a message's task: the task, working, the result as an artifact, completed", async () => {
    const client = await connect();
    const events: { kind: string; state?: TaskState; text?: string }[] = [];
    for await (const event of client.sendMessageStream(
      send(userMessage(script({ think: 200 }, { say: "streamed" }))),
    )) {
      const payload = (event as unknown as { payload?: { $case: string; value: any } }).payload;
      if (payload?.$case === "artifactUpdate")
        events.push({ kind: "artifact", text: texts(payload.value.artifact?.parts) });
      else if (payload) events.push({ kind: payload.$case, state: payload.value.status?.state });
    }
    // the task as it was when the message was in (submitted, or working if the turn began at once),
    // then each change of state once, and the result before the final status
    const [first, ...rest] = events;
    expect(first?.kind).toBe("task");
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(first?.state);
    expect(rest.slice(-2)).toEqual([
      { kind: "artifact", text: "streamed" },
      { kind: "statusUpdate", state: TaskState.TASK_STATE_COMPLETED },
    ]);
    const updates = rest.slice(0, -2);
    expect(updates).toEqual(
      first?.state === TaskState.TASK_STATE_SUBMITTED
        ? [{ kind: "statusUpdate", state: TaskState.TASK_STATE_WORKING }]
        : [],
    );
  });

  it("a subscriber to a running task gets its changes until it ends; to an ended one, the task alone", async () => {
    const client = await connect();
    const started = asTask(
      await client.sendMessage(send(userMessage(script({ think: 300 }, { say: "subscribed" })), true)),
    );
    const cases: string[] = [];
    for await (const event of client.resubscribeTask({ tenant: "", id: started.id })) {
      const payload = (event as unknown as { payload?: { $case: string } }).payload;
      cases.push(payload?.$case ?? "?");
    }
    expect(cases[0]).toBe("task");
    expect(cases.slice(-2)).toEqual(["artifactUpdate", "statusUpdate"]);
    const again: string[] = [];
    for await (const event of client.resubscribeTask({ tenant: "", id: started.id }))
      again.push((event as unknown as { payload?: { $case: string } }).payload?.$case ?? "?");
    expect(again).toEqual(["task"]);
  });

  it("answers the README's raw JSON-RPC request (A2A 1.0 wire names)", async () => {
    const response = await rpc(
      {
        jsonrpc: "2.0",
        id: 1,
        method: "SendMessage",
        params: {
          message: { messageId: `readme-${Date.now()}`, role: "ROLE_USER", parts: [{ text: "hello" }] },
        },
      },
      ADMIN,
      { "A2A-Version": "1.0" },
    );
    const answer = (await response.json()) as any;
    expect(answer.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(answer.result.task.status.message.parts).toEqual([
      { text: "echo: hello", mediaType: "text/plain" },
    ]);
  });

  it("a tenant's admin sees only its own tasks", async () => {
    const acme = await connect(TENANT_ADMIN);
    const task = asTask(await acme.sendMessage(send(userMessage("acme's task"))));
    expect((await acme.getTask({ tenant: "", id: task.id, historyLength: 0 })).history).toEqual([]);
    const other = await connect(ADMIN);
    await expect(other.getTask({ tenant: "", id: task.id, historyLength: undefined })).rejects.toThrow(
      /not found/,
    );
    await expect(other.sendMessage(send(userMessage("intrude", task.id)))).rejects.toThrow(/not found/);
    const listed = await acme.listTasks(EVERY_TASK);
    expect(listed.tasks.map((t) => t.id)).toContain(task.id);
    const mine = await other.listTasks(EVERY_TASK);
    expect(mine.tasks.map((t) => t.id)).not.toContain(task.id);
  });
});

describe("A2A refusals", () => {
  it("a missing or wrong token is HTTP 401 and creates nothing; a session token is 403", async () => {
    const before = await sessionCount();
    const message = {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: { message: userMessageJson("x") },
    };
    for (const token of [null, "not-a-token-at-all"]) {
      const response = await rpc(message, token, { "A2A-Version": "1.0" });
      expect(response.status).toBe(401);
    }
    const { token } = await createSession();
    expect((await rpc(message, token, { "A2A-Version": "1.0" })).status).toBe(403);
    expect(await sessionCount()).toBe(before + 1); // only the session made for the 403 case
  });

  it("answers bad JSON-RPC with JSON-RPC errors and changes nothing", async () => {
    const before = await sessionCount();
    const v1 = { "A2A-Version": "1.0" };
    const malformed = (await (await rpc("{not json", ADMIN, v1)).json()) as any;
    expect(malformed.error.code).toBe(-32700);
    const unknown = (await (
      await rpc({ jsonrpc: "2.0", id: 2, method: "Nope", params: {} }, ADMIN, v1)
    ).json()) as any;
    expect(unknown.error.code).toBe(-32601);
    const missingTask = (await (
      await rpc({ jsonrpc: "2.0", id: 3, method: "GetTask", params: { id: "no-such-task" } }, ADMIN, v1)
    ).json()) as any;
    expect(missingTask.error.message).toMatch(/not found/);
    const file = userMessageJson("x");
    file.parts = [{ url: "https://example.com/a.png", mediaType: "image/png" }];
    const unsupported = (await (
      await rpc({ jsonrpc: "2.0", id: 4, method: "SendMessage", params: { message: file } }, ADMIN, v1)
    ).json()) as any;
    expect(unsupported.error.message).toMatch(/not supported/);
    expect(await sessionCount()).toBe(before);
  });

  it("speaks the 0.3 method names to clients that send no A2A-Version", async () => {
    const response = await rpc({
      jsonrpc: "2.0",
      id: 7,
      method: "message/send",
      params: {
        message: {
          kind: "message",
          messageId: `legacy-${Date.now()}`,
          role: "user",
          parts: [{ kind: "text", text: "old client" }],
        },
      },
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as any;
    expect(answer.result.kind).toBe("task");
    expect(answer.result.status.state).toBe("completed");
    expect(answer.result.status.message.parts[0].text).toBe("echo: old client");
    const read = (await (
      await rpc({ jsonrpc: "2.0", id: 8, method: "tasks/get", params: { id: answer.result.id } })
    ).json()) as any;
    expect(read.result.id).toBe(answer.result.id);
  });
});

function userMessageJson(text: string): any {
  return { messageId: `raw-${Date.now()}-${Math.random()}`, role: "ROLE_USER", parts: [{ text }] };
}
