// `subagents-edge acp-bridge`: a WebSocket server in front of a stdio ACP agent (protocols.md,
// "ACP"). A Worker cannot spawn processes, and coding agents (Claude Code and Codex through their
// ACP adapters, Gemini CLI with --experimental-acp) speak ACP over stdio; the bridge gives each
// WebSocket connection its own agent process and relays newline-delimited JSON-RPC both ways.
//
// The agent runs with the rights of the user who started the bridge, so the bridge is a door to
// that user's machine (security.md, "The ACP bridge"). Every upgrade passes, in this order, before
// anything is spawned:
//   * no `Origin` header (`403`): every browser sends one on a WebSocket upgrade and the runtime's
//     provider never does, so no web page the user opens can drive the agent, token or not (a
//     page can reach 127.0.0.1, and DNS rebinding makes any host name loopback);
//   * `Authorization: Bearer <token>` (`401`), compared in constant time. There is always a token:
//     `--token`, or `ACP_BRIDGE_TOKEN` (preferred: a command line is visible to every local user
//     in `ps`), or one generated at start and printed once on standard error;
//   * a free slot (`503` with `Retry-After`): at most `--max-agents` agent processes at once; a slot
//     is taken by the upgrade and freed when its process ends.
// The agent works in the bridge's directory (`--cwd`, default the one it was started in), whatever
// a client asks: the process is spawned there, and the session-setting requests it relays name
// that directory (pinWorkingDirectory).
//
// Kept from the start:
//   * One process per connection, in its own process group: closing the socket ends the process
//     (SIGTERM, then SIGKILL after 3 s) and the process ending closes the socket (code 1000 for a
//     clean exit, 1011 otherwise). On SIGINT or SIGTERM the bridge ends every process it started:
//     no orphans.
//   * Messages are bounded (1 MiB each way): a bigger frame or an overlong stdout line closes the
//     connection with 1009 and ends the process. A frame that is not one JSON-RPC message (a JSON
//     object) is refused with 1007: relayed lines must stay one message each, and a batch would
//     carry requests past the working directory's pin.
import { spawn } from "node:child_process";
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { realpathSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { resolve } from "node:path";
import { WebSocketServer } from "ws";

const MAX_MESSAGE_BYTES = 1024 * 1024;
const KILL_AFTER_MS = 3_000;
const DEFAULT_MAX_AGENTS = 4;
const MIN_TOKEN_CHARS = 16;
/** Seconds a refused client is told to wait: a slot frees only when some agent's run ends. */
const RETRY_AFTER_S = 5;
const TOKEN_ENV = "ACP_BRIDGE_TOKEN";

export const ACP_BRIDGE_USAGE = `usage: subagents-edge acp-bridge --port <port> [options] -- <command> [args...]

Serves the stdio ACP agent <command> over WebSockets, one agent process per connection, for a
runtime's "acp" provider.

  --port <port>         port to listen on (0 picks a free one)
  --host <host>         address to listen on (default 127.0.0.1; keep it loopback and use a tunnel)
  --token <token>       the bearer token every connection must present (16 characters at least).
                        Prefer the environment variable ${TOKEN_ENV}: a command line is visible
                        to every local user in ps. With neither, a token is generated and printed
                        once on standard error, with the line to register the provider.
  --max-agents <n>      at most n agent processes at once (default ${DEFAULT_MAX_AGENTS}); a connection past it
                        is refused 503 with Retry-After
  --cwd <dir>           the agent's working directory (default: where the bridge was started);
                        the cwd a client names in session/new or session/load is replaced by it
  --help                this text

Environment:
  ${TOKEN_ENV}      the bearer token (preferred to --token); not passed on to the agent

An upgrade carrying an Origin header (any web page's) is refused 403, token or not.`;

/**
 * Parses `--port <n> [--host <h>] [--token <t>] [--max-agents <n>] [--cwd <dir>] -- <command> [args...]`;
 * the token comes from `--token`, else `env.ACP_BRIDGE_TOKEN`, else none (the caller generates one).
 * @param {string[]} argv
 * @param {Record<string, string | undefined>} env
 */
export function parseBridgeArgs(argv, env = process.env) {
  const split = argv.indexOf("--");
  if (split < 0 || split === argv.length - 1) throw new Error("the agent's command goes after --");
  const flags = argv.slice(0, split);
  const [command, ...args] = argv.slice(split + 1);
  const options = {
    host: "127.0.0.1",
    port: undefined,
    token: env[TOKEN_ENV],
    tokenFrom: env[TOKEN_ENV] === undefined ? undefined : TOKEN_ENV,
    maxAgents: DEFAULT_MAX_AGENTS,
    cwd: process.cwd(),
    command,
    args,
  };
  for (let i = 0; i < flags.length; i += 2) {
    const [flag, value] = [flags[i], flags[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === "--port") options.port = Number(value);
    else if (flag === "--host") options.host = value;
    else if (flag === "--token") [options.token, options.tokenFrom] = [value, "--token"];
    else if (flag === "--max-agents") options.maxAgents = Number(value);
    else if (flag === "--cwd") options.cwd = resolve(value);
    else throw new Error(`unknown option ${flag}`);
  }
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535)
    throw new Error("--port must be a port number (0 picks a free one)");
  if (!Number.isInteger(options.maxAgents) || options.maxAgents < 1)
    throw new Error("--max-agents must be a whole number of processes, 1 or more");
  if (options.token !== undefined && options.token.length < MIN_TOKEN_CHARS)
    throw new Error(`the token (${options.tokenFrom}) must have ${MIN_TOKEN_CHARS} characters at least`);
  return options;
}

/** Client requests that set up a session, each naming the session's working directory. */
const SESSION_SETUP = new Set(["session/new", "session/load", "session/resume", "session/fork"]);

/**
 * The client's message as the agent receives it: the bridge, not the client, decides where the
 * agent works. A session-setting request names `cwd` and loses what would widen the agent's reach
 * past it: ACP's `additionalDirectories`, and `_meta`, where agents take their own options (Claude
 * Code's adapter spreads `_meta.claudeCode.options` into its SDK's: directories, hooks, an
 * executable). Any other request naming a `cwd` (session/list's filter) names `cwd` too; answers
 * and everything else pass as sent.
 * @param {Record<string, unknown>} message one JSON-RPC message from the client
 * @param {string} cwd
 */
export function pinWorkingDirectory(message, cwd) {
  if (typeof message.method !== "string") return message;
  const params = message.params;
  const isObject = typeof params === "object" && params !== null && !Array.isArray(params);
  if (SESSION_SETUP.has(message.method)) {
    if (!isObject) return message; // the agent refuses params that are not an object
    const { additionalDirectories: _widening, _meta: _options, ...rest } = params;
    return { ...message, params: { ...rest, cwd } };
  }
  if (isObject && "cwd" in params) return { ...message, params: { ...params, cwd } };
  return message;
}

/** A token for a bridge started without one: 256 random bits. */
export function generateToken() {
  return randomBytes(32).toString("base64url");
}

const digest = (text) => createHash("sha256").update(text, "utf8").digest();

/**
 * Starts a bridge; resolves with `{ port, close() }` once it listens.
 * @param {{host: string, port: number, token: string, maxAgents?: number, cwd?: string, command: string, args: string[], log?: (line: string) => void}} options
 */
export async function startAcpBridge(options) {
  if (typeof options.token !== "string" || options.token.length === 0)
    throw new Error("the bridge never runs without a token");
  const log = options.log ?? ((line) => console.error(line));
  const maxAgents = options.maxAgents ?? DEFAULT_MAX_AGENTS;
  // the real path: what the agent's own process.cwd() reports, and a directory that exists now
  const cwd = realpathSync(options.cwd ?? process.cwd());
  if (!statSync(cwd).isDirectory()) throw new Error(`--cwd ${cwd} is not a directory`);
  const agentEnv = { ...process.env };
  delete agentEnv[TOKEN_ENV]; // the agent runs whatever its prompts ask: it has no use for the door's key
  // digests of equal length, so the comparison's time says nothing about the token
  const expected = digest(options.token);
  const children = new Set();
  let running = 0;

  const server = createServer((_req, res) => {
    res
      .writeHead(426, { "content-type": "text/plain" })
      .end("this is an ACP bridge: connect with a WebSocket\n");
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });

  server.on("upgrade", (req, socket, head) => {
    if (req.headers.origin !== undefined)
      return refuse(socket, 403, "Forbidden", [], "an upgrade from a web page (Origin) is refused\n");
    const presented = /^Bearer (.+)$/i.exec(req.headers.authorization ?? "")?.[1] ?? "";
    if (!timingSafeEqual(digest(presented), expected))
      return refuse(socket, 401, "Unauthorized", ["www-authenticate: Bearer"], "");
    if (running >= maxAgents)
      return refuse(
        socket,
        503,
        "Service Unavailable",
        [`retry-after: ${RETRY_AFTER_S}`],
        `every agent slot is taken (--max-agents ${maxAgents})\n`,
      );
    // the slot is taken now, before the handshake completes, so concurrent upgrades cannot all
    // pass the check; a handshake that fails (the socket closes without a connection) gives it back
    const release = once(() => {
      running -= 1;
    });
    running += 1;
    let connected = false;
    socket.once("close", () => {
      if (!connected) release();
    });
    wss.handleUpgrade(req, socket, head, (ws) => {
      connected = true;
      relay(ws, release);
    });
  });

  /** One connection: its own agent process, lines relayed both ways, each end closing the other. */
  function relay(ws, release) {
    const child = spawn(options.command, options.args, {
      cwd,
      env: agentEnv,
      stdio: ["pipe", "pipe", "inherit"],
      detached: true, // its own process group: ending it ends whatever the agent started too
    });
    children.add(child);
    let exited = false;
    const gone = () => {
      exited = true;
      children.delete(child);
      release();
    };
    const end = () => {
      if (exited) return;
      signal(child, "SIGTERM");
      setTimeout(() => {
        if (!exited) signal(child, "SIGKILL");
      }, KILL_AFTER_MS).unref();
    };
    // writes to an agent that just exited fail with EPIPE: its exit closes the socket anyway
    child.stdin.on("error", () => {});
    child.on("error", (error) => {
      log(`acp-bridge: could not start ${options.command}: ${error.message}`);
      if (child.pid === undefined) gone(); // never started: no exit will come
      ws.close(1011, "the agent could not start");
    });
    child.on("exit", (code, sig) => {
      gone();
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING)
        ws.close(
          code === 0 ? 1000 : 1011,
          code === 0 ? "the agent exited" : `the agent ended (${code ?? sig})`,
        );
    });

    let buffered = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      buffered += chunk;
      let newline = buffered.indexOf("\n");
      while (newline >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (line.length > 0 && ws.readyState === ws.OPEN) ws.send(line);
        newline = buffered.indexOf("\n");
      }
      if (Buffer.byteLength(buffered) > MAX_MESSAGE_BYTES) {
        ws.close(1009, "the agent wrote a message over 1 MiB");
        end();
      }
    });

    ws.on("message", (data, isBinary) => {
      const text = isBinary ? Buffer.from(data).toString("utf8") : data.toString();
      let message;
      try {
        message = JSON.parse(text);
      } catch {
        message = undefined;
      }
      if (typeof message !== "object" || message === null || Array.isArray(message)) {
        ws.close(1007, "a message must be one JSON-RPC message");
        end();
        return;
      }
      // one message per line, whatever whitespace the sender used
      if (!exited && child.stdin.writable)
        child.stdin.write(`${JSON.stringify(pinWorkingDirectory(message, cwd))}\n`);
    });
    ws.on("close", end);
    ws.on("error", end);
  }

  const stopAll = () => {
    for (const child of children) signal(child, "SIGKILL");
  };
  process.once("exit", stopAll);

  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, resolve);
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : options.port,
    cwd,
    maxAgents,
    /** Ends every agent process and stops listening. */
    async close() {
      for (const client of wss.clients) client.terminate();
      stopAll();
      await new Promise((resolve) => server.close(() => resolve()));
      process.removeListener("exit", stopAll);
    },
  };
}

/** Answers an upgrade with an HTTP error and closes the connection; nothing else happens. */
function refuse(socket, status, reason, headers, body) {
  socket.end(
    [
      `HTTP/1.1 ${status} ${reason}`,
      ...headers,
      "content-type: text/plain",
      `content-length: ${Buffer.byteLength(body)}`,
      "connection: close",
      "",
      body,
    ].join("\r\n"),
  );
}

function once(fn) {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}

function signal(child, name) {
  try {
    process.kill(-child.pid, name); // the whole group
  } catch {
    try {
      child.kill(name);
    } catch {
      // already gone
    }
  }
}

/** The command's entry: parse, start (generating a token if none is given), end every agent on SIGINT or SIGTERM. */
export async function acpBridgeMain(argv) {
  const split = argv.indexOf("--");
  const flags = split < 0 ? argv : argv.slice(0, split);
  if (flags.includes("--help") || flags.includes("-h")) {
    console.error(ACP_BRIDGE_USAGE);
    return;
  }
  const options = parseBridgeArgs(argv);
  const generated = options.token === undefined;
  const token = generated ? generateToken() : options.token;
  const bridge = await startAcpBridge({ ...options, token });
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  const url = `ws://${host}:${bridge.port}`;
  console.error(
    `acp-bridge: ${url} -> ${options.command} ${options.args.join(" ")}`.trim() +
      ` (bearer token required; at most ${bridge.maxAgents} agents at once; working directory ${bridge.cwd})`,
  );
  if (options.tokenFrom === "--token")
    console.error(
      `acp-bridge: --token is visible to every local user in ps; prefer ${TOKEN_ENV} in the environment`,
    );
  if (generated) {
    // the only place the token is ever shown: the registration carries it to the runtime
    const provider = JSON.stringify({ kind: "acp", url, token });
    console.error(
      [
        `acp-bridge: neither --token nor ${TOKEN_ENV} was given, so this token was generated; it is shown only now.`,
        "Register the bridge with your runtime (a name of your choice; the runtime's URL and admin token):",
        `  curl -X PUT "http://127.0.0.1:8787/v1/providers/<name>" -H "authorization: Bearer $ADMIN_TOKEN" -H "content-type: application/json" -d '${provider}'`,
      ].join("\n"),
    );
  }
  for (const name of ["SIGINT", "SIGTERM"]) {
    process.once(name, () => {
      void bridge.close().finally(() => process.exit(0));
    });
  }
}
