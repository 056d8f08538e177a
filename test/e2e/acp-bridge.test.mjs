// `subagents-edge acp-bridge`: a stdio ACP agent (test/e2e/fixtures/acp-stdio-agent.mjs, on the
// official ACP SDK's agent side) behind a WebSocket: the token on the upgrade, JSON-RPC relayed
// both ways, each end closing the other, no process outliving its connection, bounded messages;
// and a one-shot child of the runtime (wrangler dev) reaching the agent through it.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { WebSocket } from "ws";
import { parseBridgeArgs, startAcpBridge } from "../../cli/acp-bridge.mjs";
import { allEvents, api, createSession, waitForEvents } from "./lib/api.mjs";
import { freePort, randomToken, removeDir, REPO_ROOT, startDevServer, tempDir } from "./lib/dev-server.mjs";

const AGENT = join(REPO_ROOT, "test/e2e/fixtures/acp-stdio-agent.mjs");
const TOKEN = "bridge-token-7d1e2c";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Opens a WebSocket to the bridge; resolves with {ws, messages, closed} or rejects with the HTTP status. */
function open(port, token = TOKEN) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(
      `ws://127.0.0.1:${port}`,
      token ? { headers: { authorization: `Bearer ${token}` } } : {},
    );
    const messages = [];
    const closed = new Promise((r) => ws.on("close", (code) => r(code)));
    ws.on("message", (data) => messages.push(JSON.parse(data.toString())));
    ws.on("open", () => resolve({ ws, messages, closed }));
    ws.on("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.on("error", reject);
  });
}

async function until(ok, what, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe("subagents-edge acp-bridge", () => {
  let bridge;
  let pids;

  before(async () => {
    pids = mkdtempSync(join(tmpdir(), "acp-pids-"));
    process.env.ACP_AGENT_PID_DIR = pids;
    bridge = await startAcpBridge({
      host: "127.0.0.1",
      port: 0,
      token: TOKEN,
      command: process.execPath,
      args: [AGENT],
      log: () => {},
    });
  });

  after(async () => {
    await bridge?.close();
  });

  const agentPids = () => readdirSync(pids).map(Number);

  it("parses its command line and refuses a wrong one", () => {
    assert.deepEqual(parseBridgeArgs(["--port", "7000", "--token", "t", "--", "claude-code-acp", "--x"]), {
      host: "127.0.0.1",
      port: 7000,
      token: "t",
      command: "claude-code-acp",
      args: ["--x"],
    });
    assert.throws(() => parseBridgeArgs(["--port", "7000"]), /after --/);
    assert.throws(() => parseBridgeArgs(["--port", "x", "--", "a"]), /--port/);
    assert.throws(() => parseBridgeArgs(["--nope", "1", "--", "a"]), /unknown option/);
  });

  it("refuses an upgrade without the token, before starting any process", async () => {
    const before = agentPids().length;
    await assert.rejects(open(bridge.port, null), /HTTP 401/);
    await assert.rejects(open(bridge.port, "wrong"), /HTTP 401/);
    await sleep(100);
    assert.equal(agentPids().length, before);
  });

  it("relays JSON-RPC both ways, and ends the agent when the socket closes", async () => {
    const before = new Set(agentPids());
    const conn = await open(bridge.port);
    conn.ws.send(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: 1, clientCapabilities: {} },
      }),
    );
    await until(() => conn.messages.length > 0, "initialize's answer");
    assert.deepEqual(conn.messages[0], {
      jsonrpc: "2.0",
      id: 1,
      result: { protocolVersion: 1, agentCapabilities: { loadSession: false }, authMethods: [] },
    });
    // a message spread over lines by its sender still reaches the agent as one line
    conn.ws.send(
      `{"jsonrpc": "2.0",\n "id": 2, "method": "session/new",\n "params": {"cwd": "/", "mcpServers": []}}`,
    );
    await until(() => conn.messages.length > 1, "session/new's answer");
    assert.match(conn.messages[1].result.sessionId, /^stdio-/);
    const pid = agentPids().find((p) => !before.has(p));
    assert.ok(pid && alive(pid), "one agent process for the connection");
    conn.ws.close();
    await until(() => !alive(pid), "the agent to end with its socket");
  });

  it("closes the socket when the agent ends (1000 for a clean exit, 1011 otherwise)", async () => {
    for (const [text, code] of [
      ["exit now", 1000],
      ["exit badly", 1011],
    ]) {
      const conn = await open(bridge.port);
      conn.ws.send(
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: 1, clientCapabilities: {} },
        }),
      );
      await until(() => conn.messages.length > 0, "initialize's answer");
      conn.ws.send(
        JSON.stringify({
          jsonrpc: "2.0",
          id: 2,
          method: "session/new",
          params: { cwd: "/", mcpServers: [] },
        }),
      );
      await until(() => conn.messages.length > 1, "the session");
      const sessionId = conn.messages[1].result.sessionId;
      conn.ws.send(
        JSON.stringify({
          jsonrpc: "2.0",
          id: 3,
          method: "session/prompt",
          params: { sessionId, prompt: [{ type: "text", text }] },
        }),
      );
      assert.equal(await conn.closed, code);
    }
  });

  it("refuses frames that are not one JSON value, and frames over 1 MiB, ending the agent", async () => {
    const notJson = await open(bridge.port);
    notJson.ws.send("not json at all");
    assert.equal(await notJson.closed, 1007);
    const huge = await open(bridge.port);
    huge.ws.send(
      JSON.stringify({ jsonrpc: "2.0", method: "x", params: { pad: "x".repeat(1024 * 1024 + 10) } }),
    );
    assert.equal(await huge.closed, 1009);
    await sleep(500);
    for (const pid of agentPids()) assert.equal(alive(pid), false, `agent ${pid} outlived its connection`);
  });

  it("lets a one-shot child of the runtime reach the stdio agent through the bridge", async () => {
    const server = await startDevServer();
    try {
      const name = `stdio-${crypto.randomUUID().slice(0, 8)}`;
      const put = await api(server, "PUT", `/v1/providers/${name}`, {
        body: { kind: "acp", url: `ws://127.0.0.1:${bridge.port}`, token: TOKEN },
      });
      assert.equal(put.status, 201, JSON.stringify(put.body));
      const { id } = await createSession(server);
      const started = await api(server, "POST", `/v1/sessions/${id}/subagents`, {
        body: { provider: name, mode: "one-shot", prompt: "hello over stdio" },
      });
      assert.equal(started.status, 201, JSON.stringify(started.body));
      const run = await api(server, "GET", `/v1/sessions/${id}/runs/${started.body.runId}?wait=20000`);
      assert.equal(run.body.state, "settled");
      assert.deepEqual(run.body.result.output, [{ type: "text", text: "stdio agent: hello over stdio" }]);
      assert.equal(run.body.result.stopReason, "completed");
    } finally {
      await server.stop();
    }
    // the run's connection ended with the run: its agent process is gone too
    await until(() => agentPids().every((pid) => !alive(pid)), "every agent to end with its connection");
  });

  it("DELETE cancels a run through the bridge: session/cancel reaches the agent, the run ends aborted, its process ends", async () => {
    const server = await startDevServer();
    const earlier = new Set(agentPids());
    try {
      const put = await api(server, "PUT", "/v1/providers/cancellable", {
        body: { kind: "acp", url: `ws://127.0.0.1:${bridge.port}`, token: TOKEN },
      });
      assert.equal(put.status, 201, JSON.stringify(put.body));
      const { id } = await createSession(server);
      const started = await api(server, "POST", `/v1/sessions/${id}/subagents`, {
        body: { provider: "cancellable", mode: "one-shot", prompt: "slow 60000 never" },
      });
      assert.equal(started.status, 201, JSON.stringify(started.body));
      const { runId } = started.body;
      await waitForEvents(server, id, (es) => es.some((e) => e.type === "subagent/remote"));
      assert.equal((await api(server, "DELETE", `/v1/sessions/${id}/runs/${runId}`)).status, 202);
      const run = (await api(server, "GET", `/v1/sessions/${id}/runs/${runId}?wait=20000`)).body;
      assert.equal(run.state, "settled");
      // the agent itself answered the prompt `cancelled` (a run that only timed out its grace
      // would say "the run was cancelled by its parent" in a diagnostic)
      assert.deepEqual(run.result, { output: [], stopReason: "aborted" });
    } finally {
      await server.stop();
    }
    await until(
      () =>
        agentPids()
          .filter((pid) => !earlier.has(pid))
          .every((pid) => !alive(pid)),
      "the cancelled run's agent to end",
    );
  });

  it("a parent restarted mid-run reconnects through the bridge and resumes the agent's session (session/load), with one result", async () => {
    const sessions = mkdtempSync(join(tmpdir(), "acp-sessions-"));
    const resumable = await startAcpBridge({
      host: "127.0.0.1",
      port: 0,
      token: TOKEN,
      command: process.execPath,
      args: [AGENT, "--session-dir", sessions],
      log: () => {},
    });
    const dir = tempDir();
    const token = randomToken();
    const port = await freePort();
    let server = await startDevServer({ persistTo: dir, token, port });
    try {
      const put = await api(server, "PUT", "/v1/providers/resumable", {
        body: { kind: "acp", url: `ws://127.0.0.1:${resumable.port}`, token: TOKEN },
      });
      assert.equal(put.status, 201, JSON.stringify(put.body));
      const { id } = await createSession(server);
      const started = await api(server, "POST", `/v1/sessions/${id}/subagents`, {
        body: { provider: "resumable", mode: "one-shot", prompt: "slow 5000 resumed over stdio" },
      });
      assert.equal(started.status, 201, JSON.stringify(started.body));
      const { runId } = started.body;
      const known = await waitForEvents(server, id, (es) => es.some((e) => e.type === "subagent/remote"));
      const sessionId = known.find((e) => e.type === "subagent/remote").data.remoteId;
      // the parent goes away mid-prompt: its socket closes, and the bridge ends that agent
      await server.stop();
      server = await startDevServer({ persistTo: dir, token, port });
      const deadline = Date.now() + 90_000;
      let run;
      do {
        run = (await api(server, "GET", `/v1/sessions/${id}/runs/${runId}?wait=10000`)).body;
      } while (run.state !== "settled" && Date.now() < deadline);
      assert.deepEqual(run.result, {
        output: [{ type: "text", text: "stdio agent: resumed over stdio" }],
        stopReason: "completed",
      });
      const events = await allEvents(server, id);
      const mine = events.filter((e) => e.data?.runId === runId).map((e) => e.type);
      assert.deepEqual(mine, ["subagent/start", "subagent/remote", "subagent/end"]);
      // the same agent session was loaded by a new agent process and prompted again there
      const history = JSON.parse(readFileSync(join(sessions, `${sessionId}.json`), "utf8"));
      assert.deepEqual(
        history.filter((m) => m.role === "user").map((m) => m.text),
        ["slow 5000 resumed over stdio", "slow 5000 resumed over stdio"],
      );
    } finally {
      await server.stop();
      await resumable.close();
      removeDir(dir);
    }
    await until(() => agentPids().every((pid) => !alive(pid)), "every agent to end with its connection");
  });

  it("runs as the package's command: npx subagents-edge acp-bridge", async () => {
    const earlier = new Set(agentPids());
    const child = spawn(
      process.execPath,
      [
        join(REPO_ROOT, "cli/subagents-edge.mjs"),
        "acp-bridge",
        "--port",
        "0",
        "--token",
        TOKEN,
        "--",
        process.execPath,
        AGENT,
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr.on("data", (c) => (stderr += c));
    await until(() => /ws:\/\/127\.0\.0\.1:\d+/.test(stderr), "the bridge to listen");
    const port = Number(/ws:\/\/127\.0\.0\.1:(\d+)/.exec(stderr)[1]);
    const conn = await open(port);
    conn.ws.send(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: 1, clientCapabilities: {} },
      }),
    );
    await until(() => conn.messages.length > 0, "an answer through the command");
    child.kill("SIGTERM");
    await new Promise((r) => child.on("exit", r));
    assert.notEqual(await conn.closed, undefined);
    const started = agentPids().filter((pid) => !earlier.has(pid));
    assert.equal(started.length, 1);
    await until(() => started.every((pid) => !alive(pid)), "the agent to end with the bridge");
  });
});
