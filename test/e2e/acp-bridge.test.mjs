// `subagents-edge acp-bridge`: a stdio ACP agent (test/e2e/fixtures/acp-stdio-agent.mjs, on the
// official ACP SDK's agent side) behind a WebSocket: the token on the upgrade, JSON-RPC relayed
// both ways, each end closing the other, no process outliving its connection, bounded messages;
// and a one-shot child of the runtime (wrangler dev) reaching the agent through it.
// Its doors (README, Security and limits: "The ACP bridge") are tried as the attacks they close: a web page's
// upgrade (`Origin`), no or a wrong token, a bridge started without a token, the token in `ps`,
// 25 connections at once, a client naming the agent's directory. "Nothing spawned" is observed in
// /proc (the bridge's children), never assumed.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { request } from "node:http";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { WebSocket } from "ws";
import { parseBridgeArgs, pinWorkingDirectory, startAcpBridge } from "../../cli/acp-bridge.mjs";
import { allEvents, api, createSession, waitForEvents } from "./lib/api.mjs";
import { freePort, randomToken, removeDir, REPO_ROOT, startDevServer, tempDir } from "./lib/dev-server.mjs";

const AGENT = join(REPO_ROOT, "test/e2e/fixtures/acp-stdio-agent.mjs");
const CLI = join(REPO_ROOT, "cli/subagents-edge.mjs");
const TOKEN = "bridge-token-7d1e2c";
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: 1, clientCapabilities: {} },
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Children of `pid` as /proc lists them, not yet reaped ones (state Z) included: what a process
 * really spawned.
 */
function childrenOf(pid) {
  const children = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses
    const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(ppid) === pid) children.push({ pid: Number(entry), state });
  }
  return children;
}

/** The children of `pid` that appeared since `earlier` (a set of pids). */
const spawnedSince = (pid, earlier) => childrenOf(pid).filter((c) => !earlier.has(c.pid));
const pidsOf = (pid) => new Set(childrenOf(pid).map((c) => c.pid));

/**
 * Opens a WebSocket to the bridge; resolves with {ws, messages, closed} or rejects with an error
 * carrying the refusal's HTTP `status` and `headers`.
 */
function open(port, token = TOKEN, extraHeaders = {}) {
  return new Promise((resolve, reject) => {
    const headers = { ...(token ? { authorization: `Bearer ${token}` } : {}), ...extraHeaders };
    const ws = new WebSocket(`ws://127.0.0.1:${port}`, { headers });
    const messages = [];
    const closed = new Promise((r) => ws.on("close", (code) => r(code)));
    ws.on("message", (data) => messages.push(JSON.parse(data.toString())));
    ws.on("open", () => resolve({ ws, messages, closed }));
    ws.on("unexpected-response", (_req, res) => {
      reject(
        Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, headers: res.headers }),
      );
      res.resume();
      ws.terminate();
    });
    ws.on("error", reject);
  });
}

/** Sends one JSON-RPC request and resolves with its answer. */
async function call(conn, message) {
  conn.ws.send(JSON.stringify(message));
  await until(() => conn.messages.some((m) => m.id === message.id), `the answer to ${message.method}`);
  return conn.messages.find((m) => m.id === message.id);
}

/** `promise`, or a rejection naming `what` if it has not settled in 10 s (never a timing assertion). */
function within(promise, what) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 10_000);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/**
 * Runs `subagents-edge acp-bridge <args>` as its own process (in `cwd`, with `env`); resolves once
 * it listens with {child, port, stderr(), stop()}; a bridge that never listens is ended.
 */
async function startCli(args, { cwd = REPO_ROOT, env = process.env } = {}) {
  const child = spawn(process.execPath, [CLI, "acp-bridge", ...args], {
    cwd,
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (c) => (stderr += c));
  const exited = new Promise((r) => child.on("exit", r));
  try {
    await until(() => /ws:\/\/127\.0\.0\.1:\d+/.test(stderr), "the bridge to listen");
  } catch (error) {
    child.kill("SIGKILL");
    throw new Error(`${error.message}; it said: ${stderr}`);
  }
  const port = Number(/ws:\/\/127\.0\.0\.1:(\d+)/.exec(stderr)[1]);
  return {
    child,
    port,
    stderr: () => stderr,
    async stop() {
      child.kill("SIGTERM");
      await within(exited, "the bridge to exit");
    },
  };
}

/** This process's environment without the variable `name`. */
function envWithout(name) {
  const env = { ...process.env };
  delete env[name];
  return env;
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
    const here = process.cwd();
    assert.deepEqual(parseBridgeArgs(["--port", "7000", "--", "claude-code-acp", "--x"], {}), {
      host: "127.0.0.1",
      port: 7000,
      token: undefined,
      tokenFrom: undefined,
      maxAgents: 4,
      cwd: here,
      command: "claude-code-acp",
      args: ["--x"],
    });
    const withEnv = parseBridgeArgs(["--port", "7000", "--max-agents", "2", "--cwd", "/tmp", "--", "a"], {
      ACP_BRIDGE_TOKEN: "from-the-environment-0123",
    });
    assert.equal(withEnv.token, "from-the-environment-0123");
    assert.equal(withEnv.tokenFrom, "ACP_BRIDGE_TOKEN");
    assert.equal(withEnv.maxAgents, 2);
    assert.equal(withEnv.cwd, "/tmp");
    // a flag beats the environment
    const flagged = parseBridgeArgs(["--port", "0", "--token", TOKEN, "--", "a"], {
      ACP_BRIDGE_TOKEN: "from-the-environment-0123",
    });
    assert.equal(flagged.token, TOKEN);
    assert.equal(flagged.tokenFrom, "--token");
    assert.throws(() => parseBridgeArgs(["--port", "7000"], {}), /after --/);
    assert.throws(() => parseBridgeArgs(["--port", "x", "--", "a"], {}), /--port/);
    assert.throws(() => parseBridgeArgs(["--nope", "1", "--", "a"], {}), /unknown option/);
    assert.throws(() => parseBridgeArgs(["--port", "0", "--token", "short", "--", "a"], {}), /16 characters/);
    assert.throws(
      () => parseBridgeArgs(["--port", "0", "--", "a"], { ACP_BRIDGE_TOKEN: "" }),
      /16 characters/,
    );
    for (const bad of ["0", "-1", "1.5", "x"])
      assert.throws(
        () => parseBridgeArgs(["--port", "0", "--max-agents", bad, "--", "a"], {}),
        /--max-agents/,
      );
  });

  it("describes its flags and environment variable in --help", () => {
    const help = spawnSync(process.execPath, [CLI, "acp-bridge", "--help"], { encoding: "utf8" });
    assert.equal(help.status, 0);
    for (const word of ["--port", "--host", "--token", "ACP_BRIDGE_TOKEN", "--max-agents", "--cwd", "Origin"])
      assert.ok(help.stderr.includes(word), `--help mentions ${word}`);
  });

  it("refuses an upgrade without the right bearer token (401), starting no process", async () => {
    const earlier = pidsOf(process.pid);
    for (const token of [null, "wrong", `${TOKEN}x`, TOKEN.slice(0, -1)])
      await assert.rejects(open(bridge.port, token), { status: 401 }, `token ${token}`);
    // the right token under another scheme is no bearer token
    await assert.rejects(open(bridge.port, null, { authorization: `Basic ${TOKEN}` }), { status: 401 });
    assert.deepEqual(spawnedSince(process.pid, earlier), []);
  });

  it("refuses any upgrade carrying an Origin header (a web page's) with 403, token or not, starting no process", async () => {
    const earlier = pidsOf(process.pid);
    for (const origin of ["https://evil.example", "http://127.0.0.1:8080", "null"]) {
      for (const token of [TOKEN, null, "wrong"])
        await assert.rejects(
          open(bridge.port, token, { origin }),
          { status: 403 },
          `${origin} with ${token}`,
        );
    }
    assert.deepEqual(spawnedSince(process.pid, earlier), []);
    // the same upgrade without the header is served: the refusal is the header's
    const conn = await open(bridge.port);
    assert.equal((await call(conn, INITIALIZE)).result.protocolVersion, 1);
    conn.ws.close();
    await within(conn.closed, "the socket to close");
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

  it("refuses frames that are not one JSON-RPC message (an object), and frames over 1 MiB, ending the agent", async () => {
    const notJson = await open(bridge.port);
    notJson.ws.send("not json at all");
    assert.equal(await within(notJson.closed, "the socket to close"), 1007);
    // a batch would carry a session/new past the working directory's pin
    const batch = await open(bridge.port);
    batch.ws.send(
      JSON.stringify([
        { ...INITIALIZE },
        { jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: "/", mcpServers: [] } },
      ]),
    );
    assert.equal(await within(batch.closed, "the socket to close"), 1007);
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

  it("a coding agent that asks permission before it writes a file writes it after approve, and not after deny", async () => {
    const server = await startDevServer();
    const files = mkdtempSync(join(tmpdir(), "acp-writes-"));
    try {
      const put = await api(server, "PUT", "/v1/providers/coder", {
        body: { kind: "acp", url: `ws://127.0.0.1:${bridge.port}`, token: TOKEN },
      });
      assert.equal(put.status, 201, JSON.stringify(put.body));
      const { id } = await createSession(server);
      const attempt = async (file, decision) => {
        const path = join(files, file);
        const started = await api(server, "POST", `/v1/sessions/${id}/subagents`, {
          body: { provider: "coder", mode: "one-shot", prompt: `write ${path} hello from ${file}` },
        });
        assert.equal(started.status, 201, JSON.stringify(started.body));
        // the agent's request is an approval of the session that owns the run, naming the provider
        const asked = await waitForEvents(server, id, (es) =>
          es.some((e) => e.type === "approval/requested" && e.data.args.toolCall.rawInput.path === path),
        );
        const request = asked.find(
          (e) => e.type === "approval/requested" && e.data.args.toolCall.rawInput.path === path,
        );
        assert.equal(request.data.tool, "coder");
        assert.equal(existsSync(path), false, "nothing is written before the decision");
        const decided = await api(server, "POST", `/v1/sessions/${id}/approvals/${request.data.approvalId}`, {
          body: { decision },
        });
        assert.equal(decided.status, 200, JSON.stringify(decided.body));
        const run = await api(server, "GET", `/v1/sessions/${id}/runs/${started.body.runId}?wait=20000`);
        assert.equal(run.body.state, "settled");
        return { path, output: run.body.result.output };
      };
      const approved = await attempt("approved.txt", "approve");
      assert.deepEqual(approved.output, [{ type: "text", text: `wrote ${approved.path}` }]);
      assert.equal(readFileSync(approved.path, "utf8"), "hello from approved.txt");
      const denied = await attempt("denied.txt", "deny");
      assert.deepEqual(denied.output, [{ type: "text", text: "not allowed: no" }]);
      assert.equal(existsSync(denied.path), false, "a denied write never happens");
    } finally {
      await server.stop();
      removeDir(files);
    }
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

  it("started with neither --token nor ACP_BRIDGE_TOKEN, generates a token, prints it once with the line to register it, and refuses a connection without it (401)", async () => {
    const home = realpathSync(mkdtempSync(join(tmpdir(), "acp-home-")));
    const cli = await startCli(["--port", "0", "--", process.execPath, AGENT], {
      cwd: home,
      env: envWithout("ACP_BRIDGE_TOKEN"),
    });
    try {
      await until(() => /"token":"[^"]+"/.test(cli.stderr()), "the generated token on stderr");
      const token = /"token":"([^"]+)"/.exec(cli.stderr())[1];
      assert.ok(token.length >= 32, "a long token");
      assert.ok(
        cli.stderr().includes(`"url":"ws://127.0.0.1:${cli.port}"`),
        "the provider's URL to register",
      );
      assert.match(cli.stderr(), /PUT .*\/v1\/providers\//);
      assert.ok(!cli.stderr().includes("undefined"));
      const earlier = pidsOf(cli.child.pid);
      await assert.rejects(open(cli.port, null), { status: 401 });
      await assert.rejects(open(cli.port, "not-the-generated-token"), { status: 401 });
      assert.deepEqual(spawnedSince(cli.child.pid, earlier), []);
      const conn = await open(cli.port, token);
      await call(conn, INITIALIZE);
      // without --cwd the agent works where the bridge was started, whatever the client names
      const created = await call(conn, {
        jsonrpc: "2.0",
        id: 2,
        method: "session/new",
        params: { cwd: "/", mcpServers: [] },
      });
      assert.deepEqual(created.result._meta.seen, {
        cwd: home,
        additionalDirectories: null,
        meta: null,
        processCwd: home,
      });
      conn.ws.close();
      await within(conn.closed, "the socket to close");
      // once: not again per connection
      assert.equal(cli.stderr().split(token).length - 1, 1, "the token is printed exactly once");
    } finally {
      await cli.stop();
      removeDir(home);
    }
  });

  it("takes its token from ACP_BRIDGE_TOKEN, which is in neither its argv (ps) nor the agent's environment", async () => {
    const secret = `env-token-${crypto.randomUUID()}`;
    const cli = await startCli(["--port", "0", "--", process.execPath, AGENT], {
      env: { ...process.env, ACP_BRIDGE_TOKEN: secret },
    });
    try {
      const argv = readFileSync(`/proc/${cli.child.pid}/cmdline`, "utf8");
      assert.ok(argv.includes("acp-bridge"), "the bridge's own command line");
      assert.ok(!argv.includes(secret), "the token is not in the bridge's argv");
      assert.ok(!cli.stderr().includes(secret), "nor printed");
      const earlier = pidsOf(cli.child.pid);
      await assert.rejects(open(cli.port, null), { status: 401 });
      await assert.rejects(open(cli.port, TOKEN), { status: 401 });
      assert.deepEqual(spawnedSince(cli.child.pid, earlier), []);
      const conn = await open(cli.port, secret);
      assert.equal((await call(conn, INITIALIZE)).result.protocolVersion, 1);
      const [agent] = spawnedSince(cli.child.pid, earlier);
      assert.ok(agent, "one agent for the connection");
      const environ = readFileSync(`/proc/${agent.pid}/environ`, "utf8").split("\0");
      assert.ok(
        !environ.some((v) => v.startsWith("ACP_BRIDGE_TOKEN=")),
        "the agent does not inherit the token",
      );
      assert.ok(!readFileSync(`/proc/${agent.pid}/cmdline`, "utf8").includes(secret));
      conn.ws.close();
      await within(conn.closed, "the socket to close");
    } finally {
      await cli.stop();
    }
  });

  it("25 authenticated connections at once start at most --max-agents processes; the rest are 503 with Retry-After and start none; a slot frees when its process ends", async () => {
    const counted = mkdtempSync(join(tmpdir(), "acp-capped-"));
    const capped = await startAcpBridge({
      host: "127.0.0.1",
      port: 0,
      token: TOKEN,
      maxAgents: 3,
      command: process.execPath,
      args: [AGENT, "--pid-dir", counted],
      log: () => {},
    });
    const earlier = pidsOf(process.pid);
    const started = () => spawnedSince(process.pid, earlier);
    let opened = [];
    try {
      const attempts = await Promise.allSettled(Array.from({ length: 25 }, () => open(capped.port)));
      opened = attempts.filter((a) => a.status === "fulfilled").map((a) => a.value);
      const refused = attempts.filter((a) => a.status === "rejected").map((a) => a.reason);
      // observed while every connection is still open: no slot has freed yet
      assert.equal(started().length, 3, "three agent processes, not 25");
      assert.equal(opened.length, 3);
      assert.equal(refused.length, 22);
      for (const refusal of refused) {
        assert.equal(refusal.status, 503, refusal.message);
        assert.ok(Number(refusal.headers["retry-after"]) > 0, "Retry-After");
      }
      // each admitted agent is a working one, and the pid files agree with /proc
      for (const conn of opened) assert.equal((await call(conn, INITIALIZE)).result.protocolVersion, 1);
      assert.equal(readdirSync(counted).length, 3);
      assert.equal(started().length, 3);
      // one connection ends, its process ends (reaped: gone from /proc), and its slot takes the
      // next connection
      opened[0].ws.close();
      await within(opened[0].closed, "the socket to close");
      await until(() => started().length === 2, "one agent to end");
      const next = await open(capped.port);
      opened.push(next);
      assert.equal((await call(next, INITIALIZE)).result.protocolVersion, 1);
      assert.equal(readdirSync(counted).length, 4);
      await assert.rejects(open(capped.port), { status: 503 });
      assert.equal(started().length, 3);
    } finally {
      for (const conn of opened) conn.ws.close();
      await capped.close();
    }
    await until(() => readdirSync(counted).every((pid) => !alive(Number(pid))), "every capped agent to end");
  });

  it("gives the slot back when an authenticated upgrade's handshake fails", async () => {
    const single = await startAcpBridge({
      host: "127.0.0.1",
      port: 0,
      token: TOKEN,
      maxAgents: 1,
      command: process.execPath,
      args: [AGENT],
      log: () => {},
    });
    const earlier = pidsOf(process.pid);
    try {
      for (let i = 0; i < 3; i++) {
        // past the token and the slot check, then refused by the WebSocket handshake itself
        const status = await new Promise((resolve, reject) => {
          const req = request({
            host: "127.0.0.1",
            port: single.port,
            headers: {
              connection: "Upgrade",
              upgrade: "websocket",
              authorization: `Bearer ${TOKEN}`,
              "sec-websocket-version": "99",
            },
          });
          req.on("response", (res) => {
            res.resume();
            resolve(res.statusCode);
          });
          req.on("error", reject);
          req.end();
        });
        assert.equal(status, 400);
      }
      assert.deepEqual(spawnedSince(process.pid, earlier), []);
      const conn = await open(single.port);
      assert.equal((await call(conn, INITIALIZE)).result.protocolVersion, 1);
      conn.ws.close();
      await within(conn.closed, "the socket to close");
    } finally {
      await single.close();
    }
  });

  it("runs the agent in --cwd, and session/new and session/load naming another directory reach it rewritten to that one", async () => {
    const workdir = realpathSync(mkdtempSync(join(tmpdir(), "acp-workdir-")));
    const sessions = mkdtempSync(join(tmpdir(), "acp-pinned-sessions-"));
    const pinned = await startAcpBridge({
      host: "127.0.0.1",
      port: 0,
      token: TOKEN,
      cwd: workdir,
      command: process.execPath,
      args: [AGENT, "--session-dir", sessions],
      log: () => {},
    });
    const expected = { cwd: workdir, additionalDirectories: null, meta: null, processCwd: workdir };
    try {
      const conn = await open(pinned.port);
      await call(conn, INITIALIZE);
      // what the runtime used to send, plus the fields that widen an agent's reach beyond cwd
      // (ACP's additionalDirectories; Claude Code's adapter spreads _meta.claudeCode.options)
      const created = await call(conn, {
        jsonrpc: "2.0",
        id: 2,
        method: "session/new",
        params: {
          cwd: "/",
          additionalDirectories: ["/etc"],
          mcpServers: [],
          _meta: { claudeCode: { options: { additionalDirectories: ["/"] } } },
        },
      });
      assert.deepEqual(created.result._meta.seen, expected);
      const { sessionId } = created.result;
      conn.ws.close();
      await within(conn.closed, "the socket to close");
      // a new process loads the session: the load names "/" too
      const again = await open(pinned.port);
      await call(again, INITIALIZE);
      const loaded = await call(again, {
        jsonrpc: "2.0",
        id: 2,
        method: "session/load",
        params: { sessionId, cwd: "/", mcpServers: [], additionalDirectories: ["/"] },
      });
      assert.deepEqual(loaded.result._meta.seen, expected);
      again.ws.close();
      await within(again.closed, "the socket to close");
    } finally {
      await pinned.close();
      removeDir(workdir);
      removeDir(sessions);
    }
  });

  it("pins the working directory of every session-setting request, and leaves every other message as sent", () => {
    const pin = pinWorkingDirectory;
    for (const method of ["session/new", "session/load", "session/resume", "session/fork"]) {
      assert.deepEqual(
        pin(
          {
            jsonrpc: "2.0",
            id: 7,
            method,
            params: {
              sessionId: "s",
              cwd: "/",
              mcpServers: [],
              additionalDirectories: ["/"],
              _meta: { x: 1 },
            },
          },
          "/work",
        ),
        { jsonrpc: "2.0", id: 7, method, params: { sessionId: "s", cwd: "/work", mcpServers: [] } },
        method,
      );
    }
    // a session-setting request without a cwd gets the bridge's
    assert.deepEqual(
      pin({ jsonrpc: "2.0", id: 1, method: "session/new", params: { mcpServers: [] } }, "/work"),
      {
        jsonrpc: "2.0",
        id: 1,
        method: "session/new",
        params: { mcpServers: [], cwd: "/work" },
      },
    );
    // any other request naming a cwd (session/list's filter) names the bridge's
    assert.deepEqual(pin({ jsonrpc: "2.0", id: 2, method: "session/list", params: { cwd: "/" } }, "/work"), {
      jsonrpc: "2.0",
      id: 2,
      method: "session/list",
      params: { cwd: "/work" },
    });
    for (const untouched of [
      { jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId: "s", prompt: [] } },
      { jsonrpc: "2.0", id: 4, result: { cwd: "/" } },
      { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "s" } },
    ])
      assert.deepEqual(pin(untouched, "/work"), untouched);
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
