// `subagents-edge acp-bridge`: a WebSocket server in front of a stdio ACP agent (protocols.md,
// "ACP"). A Worker cannot spawn processes, and coding agents (Claude Code and Codex through their
// ACP adapters, Gemini CLI with --experimental-acp) speak ACP over stdio; the bridge gives each
// WebSocket connection its own agent process and relays newline-delimited JSON-RPC both ways.
//
//   * The upgrade is authorized by `Authorization: Bearer <token>` when `--token` is given
//     (`401` otherwise, before any process starts); without `--token` only loopback may connect.
//   * One process per connection, in its own process group: closing the socket ends the process
//     (SIGTERM, then SIGKILL after 3 s) and the process ending closes the socket (code 1000 for a
//     clean exit, 1011 otherwise). On SIGINT or SIGTERM the bridge ends every process it started:
//     no orphans.
//   * Messages are bounded (1 MiB each way): a bigger frame or an overlong stdout line closes the
//     connection with 1009 and ends the process. A frame that is not one JSON value is refused
//     with 1007 (relayed lines must stay one JSON-RPC message each).
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { timingSafeEqual } from "node:crypto";
import { WebSocketServer } from "ws";

const MAX_MESSAGE_BYTES = 1024 * 1024;
const KILL_AFTER_MS = 3_000;
const LOOPBACK = new Set(["127.0.0.1", "::1", "::ffff:127.0.0.1"]);

/**
 * Parses `--port <n> [--host <h>] [--token <t>] -- <command> [args...]`.
 * @param {string[]} argv
 */
export function parseBridgeArgs(argv) {
  const split = argv.indexOf("--");
  if (split < 0 || split === argv.length - 1) throw new Error("the agent's command goes after --");
  const flags = argv.slice(0, split);
  const [command, ...args] = argv.slice(split + 1);
  const options = { host: "127.0.0.1", port: undefined, token: undefined, command, args };
  for (let i = 0; i < flags.length; i += 2) {
    const [flag, value] = [flags[i], flags[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === "--port") options.port = Number(value);
    else if (flag === "--host") options.host = value;
    else if (flag === "--token") options.token = value;
    else throw new Error(`unknown option ${flag}`);
  }
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535)
    throw new Error("--port must be a port number (0 picks a free one)");
  return options;
}

/**
 * Starts a bridge; resolves with `{ port, close() }` once it listens.
 * @param {{host: string, port: number, token?: string, command: string, args: string[], log?: (line: string) => void}} options
 */
export async function startAcpBridge(options) {
  const log = options.log ?? ((line) => console.error(line));
  const children = new Set();
  const expected = options.token === undefined ? undefined : Buffer.from(`Bearer ${options.token}`);
  const server = createServer((_req, res) => {
    res.writeHead(426, { "content-type": "text/plain" }).end("this is an ACP bridge: connect with a WebSocket\n");
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });

  server.on("upgrade", (req, socket, head) => {
    const presented = Buffer.from(req.headers.authorization ?? "");
    const allowed =
      expected === undefined
        ? LOOPBACK.has(req.socket.remoteAddress ?? "")
        : presented.length === expected.length && timingSafeEqual(presented, expected);
    if (!allowed) {
      socket.end("HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => relay(ws));
  });

  /** One connection: its own agent process, lines relayed both ways, each end closing the other. */
  function relay(ws) {
    const child = spawn(options.command, options.args, {
      stdio: ["pipe", "pipe", "inherit"],
      detached: true, // its own process group: ending it ends whatever the agent started too
    });
    children.add(child);
    let exited = false;
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
      ws.close(1011, "the agent could not start");
    });
    child.on("exit", (code, sig) => {
      exited = true;
      children.delete(child);
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING)
        ws.close(code === 0 ? 1000 : 1011, code === 0 ? "the agent exited" : `the agent ended (${code ?? sig})`);
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
        ws.close(1007, "a message must be one JSON-RPC message");
        end();
        return;
      }
      // one message per line, whatever whitespace the sender used
      if (!exited && child.stdin.writable) child.stdin.write(`${JSON.stringify(message)}\n`);
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
    /** Ends every agent process and stops listening. */
    async close() {
      for (const client of wss.clients) client.terminate();
      stopAll();
      await new Promise((resolve) => server.close(() => resolve()));
      process.removeListener("exit", stopAll);
    },
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

/** The command's entry: parse, start, and end every agent on SIGINT or SIGTERM. */
export async function acpBridgeMain(argv) {
  const options = parseBridgeArgs(argv);
  const bridge = await startAcpBridge(options);
  console.error(
    `acp-bridge: ws://${options.host}:${bridge.port} -> ${options.command} ${options.args.join(" ")}`.trim() +
      (options.token === undefined ? " (no token: loopback connections only)" : " (bearer token required)"),
  );
  for (const name of ["SIGINT", "SIGTERM"]) {
    process.once(name, () => {
      void bridge.close().finally(() => process.exit(0));
    });
  }
}
