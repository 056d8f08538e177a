// Remote delegation between two deployments at once: two `wrangler dev` processes (A and B) on
// their own loopback ports and persistence directories. B is registered on A as a remote
// provider; A's PUBLIC_URL points at a small recording proxy in front of A, so B's signed
// callbacks can be inspected and replayed. A third server (C) with a short deadline delegates to
// a port where nothing listens.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, it } from "node:test";
import { startMcpServer } from "../setup/mcp-server.ts";
import { allEvents, api, assistantTexts, createSession, waitForEvents, settledRun } from "./lib/api.mjs";
import {
  freePort,
  groupMembers,
  randomToken,
  removeDir,
  startDevServer,
  tempDir,
} from "./lib/dev-server.mjs";

const TEST_TIMEOUT_MS = 240_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A proxy to `target` that records every request (method, path, headers, body) and its status. */
async function recordingProxy(targetUrl) {
  const port = await freePort();
  const recorded = [];
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks).toString("utf8");
    const entry = { method: req.method, path: req.url, headers: { ...req.headers }, body, status: 0 };
    recorded.push(entry);
    try {
      const headers = { ...req.headers };
      delete headers.host;
      delete headers["content-length"];
      const answer = await fetch(`${targetUrl}${req.url}`, {
        method: req.method,
        headers,
        ...(req.method === "GET" ? {} : { body }),
        signal: AbortSignal.timeout(15_000),
      });
      entry.status = answer.status;
      res.writeHead(answer.status, { "content-type": "application/json" });
      res.end(await answer.text());
    } catch (error) {
      entry.status = 502;
      res.writeHead(502);
      res.end(String(error));
    }
  });
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    recorded,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The spans of `GET …/trace` on `server`, flat. */
async function spansOf(server, id) {
  const res = await api(server, "GET", `/v1/sessions/${id}/trace`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
}

function attributeOf(span, key) {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
}

function lifecycle(events, runId) {
  return events.filter((e) => e.type.startsWith("subagent/") && e.data.runId === runId);
}

/** B's session made for a run, found through B's own directory by the run's unique label. */
async function remoteSessionByLabel(b, label, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api(b, "GET", "/v1/sessions?limit=200");
    const found = res.body.sessions?.find((s) => s.label === label);
    if (found) return found.id;
    if (Date.now() > deadline) throw new Error(`no session labelled ${label} on B`);
    await sleep(200);
  }
}

describe("remote delegation between two wrangler dev deployments", { timeout: 900_000 }, () => {
  const dirs = { a: tempDir("subagents-remote-a-"), b: tempDir("subagents-remote-b-") };
  const tokens = { a: randomToken(), b: randomToken() };
  let a;
  let b;
  let proxy;
  let portB;
  let genuineCallback;

  before(async () => {
    portB = await freePort();
    const portA = await freePort();
    proxy = await recordingProxy(`http://127.0.0.1:${portA}`);
    // one at a time: two workerd start-ups at once are slow on two cores
    b = await startDevServer({ persistTo: dirs.b, token: tokens.b, port: portB });
    a = await startDevServer({
      persistTo: dirs.a,
      token: tokens.a,
      port: portA,
      vars: { PUBLIC_URL: proxy.url },
    });
    const put = await api(a, "PUT", "/v1/providers/b", {
      body: { kind: "remote", url: b.url, token: tokens.b },
    });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    assert.deepEqual(
      { kind: put.body.kind, local: put.body.local, url: put.body.url, token: put.body.token },
      { kind: "remote", local: false, url: b.url, token: undefined },
      "the listing shows where B lives, never its token",
    );
  });

  after(async () => {
    for (const server of [a, b]) {
      if (!server) continue;
      await server.stop();
      assert.deepEqual(groupMembers(server.pgid), [], "no wrangler or workerd process is left behind");
    }
    await proxy?.close();
    removeDir(dirs.a);
    removeDir(dirs.b);
  });

  it("a parent on A delegates to B and gets exactly one result, through B's signed callback", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const parent = await createSession(a, { label: "parent on A" });
    const label = `hello-${crypto.randomUUID().slice(0, 8)}`;
    const started = await api(a, "POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "b", prompt: "hello from A", mode: "one-shot", label },
    });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const { runId, id, local } = started.body;
    assert.equal(local, false);
    assert.equal(id, `remote:${runId}`);

    const run = await settledRun(a, parent.id, runId);
    assert.deepEqual(run.result, {
      output: [{ type: "text", text: "echo: hello from A" }],
      stopReason: "completed",
    });

    // the session B made for it: never A's run id
    const remoteId = await remoteSessionByLabel(b, label);
    assert.notEqual(remoteId, run.id);
    const remoteLog = await allEvents(b, remoteId);
    assert.deepEqual(assistantTexts(remoteLog), ["echo: hello from A"]);

    // exactly one result on A; B's one callback went through the proxy and was applied
    await sleep(2_000);
    const events = await allEvents(a, parent.id);
    assert.deepEqual(
      lifecycle(events, runId).map((e) => [e.type, e.data.local, e.data.stopReason]),
      [
        ["subagent/start", false, undefined],
        ["subagent/remote", undefined, undefined],
        ["subagent/end", false, "completed"],
      ],
    );
    // A recorded which session on B is its counterpart
    assert.deepEqual(lifecycle(events, runId)[1].data, { runId, kind: "remote", remoteId });
    const callbacks = proxy.recorded.filter((r) => r.path === `/v1/callbacks/${parent.id}/${runId}`);
    assert.deepEqual(
      callbacks.map((r) => r.status),
      [200],
    );
    genuineCallback = callbacks[0];
    assert.match(genuineCallback.headers["x-subagents-signature"], /^v1=[0-9a-f]{64}$/);
    // no credential of the run in what anyone can read
    const readable = JSON.stringify([events, run, remoteLog, (await api(a, "GET", "/v1/providers")).body]);
    assert.ok(!readable.includes(tokens.b), "B's token appears nowhere readable on A or B");
  });

  it("one trace covers a root on A, its local child and grandchild, a remote child on B and an MCP tool call, each under the span that caused it", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const mcp = await startMcpServer();
    try {
      const grandchild = JSON.stringify({ script: [{ say: "deep" }] });
      const child = JSON.stringify({
        script: [
          { call: [{ tool: "subagent", args: { description: "grandchild", prompt: grandchild } }] },
          { say: "child done" },
        ],
      });
      const label = `far-${crypto.randomUUID().slice(0, 8)}`;
      const root = await createSession(a, {
        label: "traced root",
        providers: ["spawn", "b"],
        mcpServers: [{ name: "calc", url: mcp.url, token: mcp.token }],
      });
      const script = JSON.stringify({
        script: [
          {
            call: [
              { tool: "subagent", args: { description: "child", prompt: child } },
              { tool: "subagent_b", args: { description: label, prompt: "hello over the wire" } },
              { tool: "mcp__calc__add", args: { a: 20, b: 22 } },
            ],
          },
          { say: "root done" },
        ],
      });
      const sent = await api(a, "POST", `/v1/sessions/${root.id}/messages`, { body: { content: script } });
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
      await waitForEvents(a, root.id, (es) => es.some((e) => e.type === "turn/end"), 120_000);

      const spans = await spansOf(a, root.id);
      const traceId = spans[0].traceId;
      assert.deepEqual([...new Set(spans.map((s) => s.traceId))], [traceId], "A's tree is one trace");
      const named = (name) => spans.filter((s) => s.name === name);
      const [rootTurn] = named("invoke_agent traced root");
      assert.equal(rootTurn.parentSpanId, undefined, "the root's turn starts the trace");
      const byId = new Map(spans.map((s) => [s.spanId, s]));
      // each span's parent is in the trace; the children hang under the calls that started them
      for (const span of spans.filter((s) => s !== rootTurn))
        assert.ok(byId.has(span.parentSpanId), span.name);
      const calls = named("execute_tool subagent");
      const [childTurn] = named("invoke_agent child");
      const [grandchildTurn] = named("invoke_agent grandchild");
      assert.equal(calls.length, 2);
      assert.equal(byId.get(childTurn.parentSpanId).name, "execute_tool subagent");
      assert.equal(attributeOf(byId.get(childTurn.parentSpanId), "gen_ai.agent.id"), root.id);
      assert.equal(byId.get(grandchildTurn.parentSpanId).name, "execute_tool subagent");
      assert.equal(
        attributeOf(byId.get(grandchildTurn.parentSpanId), "gen_ai.agent.id"),
        attributeOf(childTurn, "gen_ai.agent.id"),
      );

      // the remote child on B: its turn is a span of the same trace, under A's call that started it
      const [farCall] = named("execute_tool subagent_b");
      const remoteId = await remoteSessionByLabel(b, label);
      const farSpans = await spansOf(b, remoteId);
      const farTurn = farSpans.find((s) => s.name.startsWith("invoke_agent"));
      assert.equal(farTurn.traceId, traceId, "B's session continues A's trace");
      assert.equal(farTurn.parentSpanId, farCall.spanId);

      // the MCP server got the call's span as _meta.traceparent
      const [mcpCall] = named("execute_tool mcp__calc__add");
      const served = await (await fetch(new URL("/__calls", mcp.url))).json();
      assert.deepEqual(
        served.traceparents.filter((t) => t.tool === "add"),
        [{ tool: "add", traceparent: `00-${traceId}-${mcpCall.spanId}-01` }],
      );
    } finally {
      await mcp.close();
    }
  });

  it("forged and replayed callbacks are refused (401/409/404) and change nothing", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    assert.ok(genuineCallback, "the first test recorded B's callback");
    const [, , , parentId, runId] = genuineCallback.path.split("/");
    const eventsBefore = await allEvents(a, parentId);
    const runBefore = (await api(a, "GET", `/v1/sessions/${parentId}/runs/${runId}`)).body;
    const send = (path, body, headers) =>
      fetch(`${a.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body,
        signal: AbortSignal.timeout(15_000),
      }).then(async (r) => ({ status: r.status, body: await r.json() }));
    const signed = {
      "x-subagents-timestamp": genuineCallback.headers["x-subagents-timestamp"],
      "x-subagents-signature": genuineCallback.headers["x-subagents-signature"],
    };
    const forgedBody = genuineCallback.body.replace("echo: hello from A", "echo: forged");
    assert.notEqual(forgedBody, genuineCallback.body);

    const replay = await send(genuineCallback.path, genuineCallback.body, signed);
    assert.deepEqual([replay.status, replay.body.error.code], [409, "REPLAYED"]);
    const tampered = await send(genuineCallback.path, forgedBody, signed);
    assert.deepEqual([tampered.status, tampered.body.error.code], [401, "UNAUTHENTICATED"]);
    const madeUp = await send(genuineCallback.path, forgedBody, {
      "x-subagents-timestamp": String(Math.floor(Date.now() / 1000)),
      "x-subagents-signature": `v1=${"ab".repeat(32)}`,
    });
    assert.deepEqual([madeUp.status, madeUp.body.error.code], [401, "UNAUTHENTICATED"]);
    const unsigned = await send(genuineCallback.path, forgedBody, {});
    assert.equal(unsigned.status, 401);
    const otherRun = await send(
      `/v1/callbacks/${parentId}/${crypto.randomUUID()}`,
      genuineCallback.body,
      signed,
    );
    assert.equal(otherRun.status, 404);

    assert.deepEqual(await allEvents(a, parentId), eventsBefore, "A's log is unchanged");
    assert.deepEqual((await api(a, "GET", `/v1/sessions/${parentId}/runs/${runId}`)).body, runBefore);
  });

  it("B stopped mid-run and restarted: A still gets exactly one result", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const parent = await createSession(a);
    const label = `restart-${crypto.randomUUID().slice(0, 8)}`;
    const prompt = JSON.stringify({ script: [{ think: 3000 }, { say: "late" }] });
    const started = await api(a, "POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "b", prompt, mode: "one-shot", label },
    });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const { runId } = started.body;
    const remoteId = await remoteSessionByLabel(b, label);
    // B's turn has started (the model is thinking for 3 s): stop B now
    const thinking = await waitForEvents(
      b,
      remoteId,
      (es) => es.some((e) => e.type === "user/message"),
      10_000,
    );
    assert.equal(thinking.filter((e) => e.type === "turn/end").length, 0, "the turn is still open");
    await b.stop();
    assert.deepEqual(groupMembers(b.pgid), [], "B is gone");
    const stillRunning = await api(a, "GET", `/v1/sessions/${parent.id}/runs/${runId}`);
    assert.equal(stillRunning.body.state, "running", "A does not give up while B is away");
    await sleep(3_000);
    b = await startDevServer({ persistTo: dirs.b, token: tokens.b, port: portB });

    const run = await settledRun(a, parent.id, runId);
    assert.deepEqual(run.result, { output: [{ type: "text", text: "late" }], stopReason: "completed" });
    await sleep(3_000); // room for a duplicate (a second callback, a poll) to show up
    const events = await allEvents(a, parent.id);
    assert.deepEqual(
      lifecycle(events, runId).map((e) => e.type),
      ["subagent/start", "subagent/remote", "subagent/end"],
      "exactly one result",
    );
    const remoteLog = await allEvents(b, remoteId);
    assert.deepEqual(assistantTexts(remoteLog), ["late"], "B ran the prompt once");
    assert.equal(remoteLog.filter((e) => e.type === "user/message").length, 1);
    const applied = proxy.recorded.filter(
      (r) => r.path === `/v1/callbacks/${parent.id}/${runId}` && r.status === 200,
    );
    assert.ok(applied.length <= 1, "at most one callback was applied (polling may have come first)");
  });
});

describe("remote delegation to a deployment that is not there", { timeout: 600_000 }, () => {
  let c;
  let dir;

  before(async () => {
    dir = tempDir("subagents-remote-c-");
    c = await startDevServer({ persistTo: dir, vars: { REMOTE_DEADLINE_SECONDS: "4" } });
  });

  after(async () => {
    if (c) {
      await c.stop();
      assert.deepEqual(groupMembers(c.pgid), [], "no wrangler or workerd process is left behind");
    }
    if (dir) removeDir(dir);
  });

  it("an unreachable remote ends the run as error with a diagnostic after the deadline", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const nobody = await freePort(); // free a moment ago; nothing listens there
    const secret = `token-${crypto.randomUUID()}`;
    const put = await api(c, "PUT", "/v1/providers/gone", {
      body: { kind: "remote", url: `http://127.0.0.1:${nobody}`, token: secret },
    });
    assert.equal(put.status, 201);
    const parent = await createSession(c);
    const startedAt = Date.now();
    const started = await api(c, "POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "gone", prompt: "anyone?", mode: "one-shot" },
    });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const run = await settledRun(c, parent.id, started.body.runId, 120_000);
    const took = Date.now() - startedAt;
    assert.equal(run.result.stopReason, "error");
    assert.deepEqual(run.result.output, []);
    assert.match(
      run.result.diagnostic,
      /^the remote deployment gave no successful answer for 4 s \(last: create the remote session: no answer/,
    );
    assert.ok(!run.result.diagnostic.includes(secret), "the diagnostic carries no credential");
    assert.ok(took >= 4_000, `not before the deadline (${took} ms)`);
    const events = await allEvents(c, parent.id);
    assert.deepEqual(
      lifecycle(events, started.body.runId).map((e) => [e.type, e.data.stopReason]),
      [
        ["subagent/start", undefined],
        ["subagent/end", "error"],
      ],
    );
    assert.ok(!JSON.stringify(events).includes(secret));
  });
});
