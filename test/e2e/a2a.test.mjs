// A2A between two deployments at once, over real HTTP: two `wrangler dev` processes (A and B) on
// their own loopback ports and persistence directories. B is registered on A as an `a2a`
// provider (B's agent card, B's admin token): a parent on A delegates a one-shot run to B's A2A
// face, A is restarted mid-run, and the run still settles once with B's answer. An outside A2A
// client (the official SDK's) drives B directly: send, get, stream, cancel, a wrong token.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { allEvents, api, createSession, waitForEvents, settledRun } from "./lib/api.mjs";
import { launchBrowser } from "./lib/browser.mjs";
import {
  freePort,
  groupMembers,
  randomToken,
  removeDir,
  startDevServer,
  tempDir,
} from "./lib/dev-server.mjs";

const TEST_TIMEOUT_MS = 300_000;

async function sessionIds(server) {
  const res = await api(server, "GET", "/v1/sessions?limit=200");
  assert.equal(res.status, 200);
  return res.body.sessions.map((s) => s.id);
}

/** The SDK's own client on B, with `token` on every request. */
async function sdkClient(server, token) {
  const fetchImpl = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set("authorization", `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl(server.url);
}

function message(text, taskId = "") {
  return {
    messageId: `e2e-${crypto.randomUUID()}`,
    contextId: "",
    taskId,
    role: Role.ROLE_USER,
    parts: [
      { content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function sendRequest(msg, returnImmediately = false) {
  return {
    tenant: "",
    message: msg,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  };
}

const textsOf = (parts = []) =>
  parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");

describe("A2A between two wrangler dev deployments", { timeout: 900_000 }, () => {
  const dirs = { a: tempDir("subagents-a2a-a-"), b: tempDir("subagents-a2a-b-") };
  const tokens = { a: randomToken(), b: randomToken() };
  let a;
  let b;
  let portA;

  before(async () => {
    portA = await freePort();
    const portB = await freePort();
    // B's card names its endpoint from PUBLIC_URL (its own loopback URL here)
    b = await startDevServer({
      persistTo: dirs.b,
      token: tokens.b,
      port: portB,
      vars: { PUBLIC_URL: `http://127.0.0.1:${portB}` },
    });
    a = await startDevServer({ persistTo: dirs.a, token: tokens.a, port: portA });
    const put = await api(a, "PUT", "/v1/providers/b", {
      body: { kind: "a2a", url: b.url, token: tokens.b },
    });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    assert.deepEqual(
      { kind: put.body.kind, local: put.body.local, url: put.body.url, token: put.body.token },
      { kind: "a2a", local: false, url: b.url, token: undefined },
    );
  });

  after(async () => {
    for (const server of [a, b]) {
      if (!server) continue;
      await server.stop();
      assert.deepEqual(groupMembers(server.pgid), [], "no wrangler or workerd process is left behind");
    }
    removeDir(dirs.a);
    removeDir(dirs.b);
  });

  it("a run on B over A2A completes with B's answer, once, though A is restarted mid-run", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const parent = await createSession(a, { label: "parent on A" });
    const before = new Set(await sessionIds(b));
    const prompt = JSON.stringify({ script: [{ think: 6000 }, { say: "from B, over A2A" }] });
    const started = await api(a, "POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "b", prompt, mode: "one-shot" },
    });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const { runId, id } = started.body;
    assert.equal(id, `a2a:${runId}`);

    // once A knows B's task, A goes down and comes back on the same directory and port
    const known = await waitForEvents(a, parent.id, (es) => es.some((e) => e.type === "subagent/remote"));
    const taskId = known.find((e) => e.type === "subagent/remote").data.remoteId;
    await a.stop();
    assert.deepEqual(groupMembers(a.pgid), [], "no process of the first A is left");
    a = await startDevServer({ persistTo: dirs.a, token: tokens.a, port: portA });

    const run = await settledRun(a, parent.id, runId);
    assert.deepEqual(run.result, {
      output: [{ type: "text", text: "from B, over A2A" }],
      stopReason: "completed",
    });
    const events = await allEvents(a, parent.id);
    const lifecycle = events.filter((e) => e.type.startsWith("subagent/") && e.data.runId === runId);
    assert.deepEqual(
      lifecycle.map((e) => [e.type, e.data.stopReason]),
      [
        ["subagent/start", undefined],
        ["subagent/remote", undefined],
        ["subagent/end", "completed"],
      ],
    );
    assert.deepEqual(lifecycle[1].data, { runId, kind: "a2a", remoteId: taskId });

    // B made exactly one session (the task) and ran the prompt once
    const made = (await sessionIds(b)).filter((s) => !before.has(s));
    assert.deepEqual(made, [taskId]);
    const taskLog = await allEvents(b, taskId);
    assert.equal(taskLog.filter((e) => e.type === "user/message").length, 1);
    assert.deepEqual(run.counterpart, { kind: "a2a", id: taskId });
    const readable = JSON.stringify([events, run, (await api(a, "GET", "/v1/providers")).body]);
    assert.ok(!readable.includes(tokens.b), "B's token appears nowhere readable on A");

    // A's dashboard shows the run's counterpart in the parent's transcript: the A2A agent's task
    const profile = tempDir("subagents-a2a-browser-");
    const context = await launchBrowser(profile, { viewport: { width: 1280, height: 900 } });
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(a.url);
      await page.fill('input[name="token"]', a.token);
      await page.press('input[name="token"]', "Enter");
      await page.click(`#session-list [data-session-id="${parent.id}"] button`);
      const shown = page.locator(`[data-transcript-for="${parent.id}"] [data-event-type="subagent/remote"]`);
      await shown.waitFor({ timeout: 20_000 });
      assert.match(await shown.textContent(), /is the A2A agent's task/);
      assert.equal(await shown.locator("[data-remote-id]").getAttribute("data-remote-id"), taskId);
    } finally {
      await context.close().catch(() => {});
      removeDir(profile);
    }
  });

  it("the SDK's client sends, reads, streams and cancels on B; a wrong token creates nothing", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const client = await sdkClient(b, tokens.b);
    const done = await client.sendMessage(sendRequest(message("hi from an A2A client")));
    assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(textsOf(done.status.message.parts), "echo: hi from an A2A client");
    const read = await client.getTask({ tenant: "", id: done.id, historyLength: undefined });
    assert.deepEqual(
      read.history.map((m) => textsOf(m.parts)),
      ["hi from an A2A client", "echo: hi from an A2A client"],
    );

    // a stream opens with the task and ends at its first terminal state, which carries the answer
    // (in an artifact update before it, or in the task itself when the turn was over before the
    // stream's first read)
    const streamed = JSON.stringify({ script: [{ think: 300 }, { say: "streamed" }] });
    const events = [];
    for await (const event of client.sendMessageStream(sendRequest(message(streamed), false)))
      events.push(event.payload);
    assert.equal(events[0]?.$case, "task");
    const FINAL = [
      TaskState.TASK_STATE_COMPLETED,
      TaskState.TASK_STATE_FAILED,
      TaskState.TASK_STATE_CANCELED,
    ];
    const finalAt = events.map(
      (p) => (p.$case === "task" || p.$case === "statusUpdate") && FINAL.includes(p.value.status?.state),
    );
    assert.deepEqual(
      finalAt.flatMap((final, i) => (final ? [i] : [])),
      [events.length - 1],
      "exactly one terminal state, the stream's last event",
    );
    const answers = events.flatMap((p) =>
      p.$case === "artifactUpdate"
        ? [textsOf(p.value.artifact.parts)]
        : p.$case === "task"
          ? p.value.artifacts.map((a) => textsOf(a.parts))
          : [],
    );
    assert.deepEqual(answers, ["streamed"]);

    const long = await client.sendMessage(
      sendRequest(message(JSON.stringify({ script: [{ think: 60000 }] })), true),
    );
    assert.notEqual(long.status.state, TaskState.TASK_STATE_COMPLETED);
    const canceled = await client.cancelTask({ tenant: "", id: long.id, metadata: undefined });
    assert.equal(canceled.status.state, TaskState.TASK_STATE_CANCELED);

    const before = await sessionIds(b);
    const wrong = await fetch(`${b.url}/v1/a2a`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: "Bearer wrong-token-for-b",
        "A2A-Version": "1.0",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "SendMessage",
        params: { message: { messageId: "x", role: "ROLE_USER", parts: [{ text: "x" }] } },
      }),
    });
    assert.equal(wrong.status, 401);
    assert.deepEqual(await sessionIds(b), before);
  });
});
