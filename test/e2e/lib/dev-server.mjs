// Starts and stops a real `wrangler dev` for the end-to-end suites.
//
// Each server runs in its own process group (wrangler -> workerd), listens on a free
// loopback port, persists to the directory it is given (a temp dir by default) and gets a random
// admin token. `stop()` signals the whole group and waits until no process of it is left, so no
// workerd outlives a test. Every wait is bounded.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

const START_TIMEOUT_MS = Number(process.env.E2E_START_TIMEOUT_MS ?? 90_000);
const STOP_TIMEOUT_MS = 15_000;
const KILL_TIMEOUT_MS = 5_000;
const OUTPUT_KEEP_CHARS = 20_000;

/** Every group this process started and has not seen gone yet: killed on exit, whatever happens. */
const liveGroups = new Set();
/** Temp dirs made by tempDir() and not removed yet: removed on exit (best effort). */
const tempDirs = new Set();
process.on("exit", () => {
  for (const pgid of liveGroups) signalGroup(pgid, "SIGKILL");
  // wait (synchronously: this is an exit handler) up to 3 s for them to be gone before removing dirs
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + 3_000;
  while ([...liveGroups].some((pgid) => groupMembers(pgid).length > 0) && Date.now() < deadline) {
    Atomics.wait(nap, 0, 0, 50);
  }
  for (const dir of tempDirs) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // a workerd still closing its files: the OS temp cleaner gets it
    }
  }
});
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    for (const pgid of liveGroups) signalGroup(pgid, "SIGKILL");
    process.exit(128 + (signal === "SIGINT" ? 2 : 15));
  });
}

function signalGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is gone
  }
}

/** Pids of live (non-zombie) processes in a process group; reads /proc, falls back to kill(0). */
export function groupMembers(pgid) {
  let entries;
  try {
    entries = readdirSync("/proc");
  } catch {
    return signalGroup(pgid, 0) ? [pgid] : [];
  }
  const members = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    // pid (comm) state ppid pgrp ...: comm may contain spaces and parentheses, so split after the last ')'
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] !== "Z" && Number(fields[2]) === pgid) members.push(Number(entry));
  }
  return members;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitUntilGone(pgid, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (groupMembers(pgid).length === 0) return true;
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
}

/** A loopback TCP port that was free a moment ago. */
export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

export function tempDir(prefix = "subagents-e2e-") {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

export function removeDir(dir) {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  tempDirs.delete(dir);
}

export function randomToken() {
  return `e2e-admin-${crypto.randomUUID().replaceAll("-", "")}`;
}

/**
 * Starts `wrangler dev` and resolves once GET `<basePath>/v1/health` answers `{ok: true}`. `port`
 * pins the port (a restart on the same port keeps the server's URL, e.g. for a registered remote
 * provider); `vars` are further `--var`s (e.g. PUBLIC_URL, REMOTE_DEADLINE_SECONDS). `cwd` runs
 * another project (its own wrangler.toml) with this repository's wrangler; `basePath` is where
 * that project mounts the API.
 * @param {{persistTo?: string, token?: string, timeoutMs?: number, port?: number, vars?: Record<string, string>, cwd?: string, basePath?: string}} [options]
 */
export async function startDevServer(options = {}) {
  const persistTo = options.persistTo ?? tempDir();
  const token = options.token ?? randomToken();
  const timeoutMs = options.timeoutMs ?? START_TIMEOUT_MS;
  const vars = options.vars ?? {};
  const cwd = options.cwd ?? REPO_ROOT;
  const basePath = options.basePath ?? "";
  let lastError;
  // A free port can be taken between probing and binding: retry once with new ports.
  for (let attempt = 0; attempt < 2; attempt++) {
    const server = await launch({ persistTo, token, timeoutMs, port: options.port, vars, cwd, basePath });
    try {
      await server.ready;
      return server;
    } catch (error) {
      lastError = error;
      await server.stop().catch(() => {});
      if (!/address already in use|EADDRINUSE/i.test(server.output())) break;
    }
  }
  throw lastError;
}

async function launch({ persistTo, token, timeoutMs, port: pinned, vars, cwd, basePath }) {
  const port = pinned ?? (await freePort());
  const inspectorPort = await freePort();
  const args = [
    join(REPO_ROOT, "node_modules", "wrangler", "bin", "wrangler.js"),
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    persistTo,
    "--var",
    `ADMIN_TOKEN:${token}`,
    ...Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
    "--show-interactive-dev-session=false",
  ];
  // this repository's wrangler on the Node that runs the tests (Node 22), in the project's folder
  const child = spawn(process.execPath, args, {
    cwd,
    detached: true, // its own process group: stop() signals wrangler and workerd together
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      X_LOCAL_OBSERVABILITY: "false",
      WRANGLER_SEND_METRICS: "false",
      FORCE_COLOR: "0",
      NO_COLOR: "1",
    },
  });
  const pgid = child.pid;
  if (pgid === undefined) throw new Error("could not spawn wrangler dev");
  liveGroups.add(pgid);

  let output = "";
  const keep = (chunk) => {
    output = (output + chunk).slice(-OUTPUT_KEEP_CHARS);
    if (process.env.E2E_VERBOSE) process.stderr.write(chunk);
  };
  child.stdout.setEncoding("utf8").on("data", keep);
  child.stderr.setEncoding("utf8").on("data", keep);

  let exited = null;
  const exit = new Promise((resolveExit) => {
    child.on("exit", (code, signal) => {
      exited = { code, signal };
      resolveExit(exited);
    });
    child.on("error", (error) => {
      exited = { code: null, signal: null, error };
      resolveExit(exited);
    });
  });

  const url = `http://127.0.0.1:${port}`;
  const server = {
    url,
    wsUrl: `ws://127.0.0.1:${port}`,
    port,
    token,
    persistTo,
    pgid,
    output: () => output,
    exited: () => exited,
    /** SIGTERM to the group, then SIGKILL; resolves once no process of the group is alive. */
    async stop() {
      if (!liveGroups.has(pgid)) return;
      signalGroup(pgid, "SIGTERM");
      let gone = await waitUntilGone(pgid, STOP_TIMEOUT_MS);
      if (!gone) {
        signalGroup(pgid, "SIGKILL");
        gone = await waitUntilGone(pgid, KILL_TIMEOUT_MS);
      }
      await Promise.race([exit, sleep(KILL_TIMEOUT_MS)]);
      if (!gone)
        throw new Error(`wrangler dev (pgid ${pgid}) still has processes: ${groupMembers(pgid).join(", ")}`);
      liveGroups.delete(pgid);
    },
  };

  server.ready = (async () => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (exited) {
        throw new Error(`wrangler dev exited before it was ready (${JSON.stringify(exited)}):\n${output}`);
      }
      try {
        const response = await fetch(`${url}${basePath}/v1/health`, { signal: AbortSignal.timeout(2_000) });
        const body = await response.json().catch(() => null);
        if (response.status === 200 && body?.ok === true) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        throw new Error(
          `wrangler dev did not answer GET ${basePath}/v1/health within ${timeoutMs} ms:\n${output}`,
        );
      }
      await sleep(200);
    }
  })();
  server.ready.catch(() => {}); // awaited by startDevServer; never an unhandled rejection
  return server;
}

/**
 * Runs a command to its end in its own process group and resolves with its stdout and stderr. Unlike
 * execFileSync it never blocks the test's event loop, and it never waits on a pipe that a
 * grandchild (a workerd that wrangler started) still holds: once the command exits, whatever is
 * left of its group is killed. A command still running after `timeoutMs` has its whole group
 * killed and rejects with its output so far, as does one that exits non-zero.
 * @param {string} command
 * @param {string[]} args
 * @param {{cwd: string, timeoutMs?: number, env?: Record<string, string>}} options
 * @returns {Promise<{stdout: string, stderr: string}>}
 */
export async function runCommand(command, args, { cwd, timeoutMs = 180_000, env = {} }) {
  const started = Date.now();
  const child = spawn(command, args, {
    cwd,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  const pgid = child.pid;
  if (pgid === undefined) throw new Error(`could not spawn ${command}`);
  liveGroups.add(pgid);
  let stdout = "";
  let stderr = "";
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk) => {
    stdout += chunk;
    output = (output + chunk).slice(-OUTPUT_KEEP_CHARS);
  });
  child.stderr.setEncoding("utf8").on("data", (chunk) => {
    stderr += chunk;
    output = (output + chunk).slice(-OUTPUT_KEEP_CHARS);
  });
  const exited = new Promise((resolveExit) => {
    child.on("exit", (code, signal) => resolveExit({ code, signal }));
    child.on("error", (error) => resolveExit({ code: null, signal: null, error }));
  });
  const drained = Promise.all([child.stdout, child.stderr].map((s) => new Promise((r) => s.on("close", r))));
  let timer;
  const timedOut = new Promise((resolveTimeout) => {
    timer = setTimeout(() => resolveTimeout(null), timeoutMs);
  });
  const end = await Promise.race([exited, timedOut]);
  clearTimeout(timer);
  // the rest of its output, unless a process it left behind holds the pipes open
  if (end !== null) await Promise.race([drained, sleep(KILL_TIMEOUT_MS)]);
  // the command has ended (or is being ended): nothing of its group outlives it
  signalGroup(pgid, "SIGKILL");
  await waitUntilGone(pgid, KILL_TIMEOUT_MS);
  liveGroups.delete(pgid);
  const shown = `${command} ${args.join(" ")}`;
  if (end === null) {
    throw new Error(`${shown} (in ${cwd}) did not end within ${timeoutMs} ms; its output:\n${output}`);
  }
  if (end.error || end.code !== 0) {
    const how = end.error ? String(end.error) : `exit ${JSON.stringify(end)}`;
    throw new Error(`${shown} (in ${cwd}) failed after ${Date.now() - started} ms (${how}):\n${output}`);
  }
  return { stdout, stderr };
}
