// The package as users install it: `npm pack` of this repository, the tarball installed into
// fresh projects, run under `wrangler dev` and driven over HTTP. Three projects:
//   * examples/notes-agent (copied): a Worker of its own with the runtime under /agents, KV tools
//     and a model route of its own; also typechecked against the packed declarations;
//   * the quick start: exactly the README's `wrangler.toml`, `src/worker.ts` and `tsconfig.json`,
//     typechecked with that tsconfig after `wrangler types`, as the README tells a user to;
//   * the README's `subagents-edge/core` Worker (protocols: [mcp]), bundled as `wrangler deploy`
//     would upload it (and once more with no protocol) to see which protocol SDKs it carries, and
//     split by `subagents-edge build` under the README's split wrangler.toml.
// Nothing here reads this repository's sources: the published shape is what is tested, down to
// the pages its declarations and docs name (each must be in the tarball).
import assert from "node:assert/strict";
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join, posix } from "node:path";
import { after, before, describe, it } from "node:test";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { api, createSession, sendMessage, waitForEvents } from "./lib/api.mjs";
import { REPO_ROOT, removeDir, runCommand, startDevServer, tempDir } from "./lib/dev-server.mjs";
import { docsNamed, relativeLinks } from "./lib/doc-links.mjs";

/** A command to its end (bounded, never blocking the event loop), with npm's chatter off. */
async function run(command, args, cwd) {
  const { stdout } = await runCommand(command, args, {
    cwd,
    env: { npm_config_fund: "false", npm_config_audit: "false", npm_config_update_notifier: "false" },
  });
  return stdout;
}

/** The README's fenced block right after `<!-- quickstart:<name> -->`. */
function quickstartFile(name) {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const at = readme.indexOf(`<!-- quickstart:${name} -->`);
  assert.ok(at >= 0, `README.md has no quickstart block for ${name}`);
  const block = /```[a-z]*\n([\s\S]*?)```/.exec(readme.slice(at));
  assert.ok(block, `README.md's quickstart block for ${name} is not a fenced block`);
  return block[1];
}

/** A session under a base path: the e2e API helpers take the base as part of the server URL. */
function mounted(server, basePath) {
  return { ...server, url: `${server.url}${basePath}`, wsUrl: `${server.wsUrl}${basePath}` };
}

function script(...steps) {
  return JSON.stringify({ script: steps });
}

async function turnOf(server, id, content) {
  await sendMessage(server, id, content);
  return waitForEvents(server, id, (es) => es.some((e) => e.type === "turn/end"));
}

describe("the packed package in fresh projects", () => {
  let work;
  let tarball;
  let deps;
  const servers = [];

  before(async () => {
    work = tempDir("subagents-package-");
    // `npm pack` runs `prepack` (the build), whose output comes before the JSON on stdout
    const output = await run("npm", ["pack", "--json", "--pack-destination", work], REPO_ROOT);
    const packed = JSON.parse(output.slice(output.search(/^\[/m)));
    tarball = join(work, packed[0].filename);
    // one install of the tarball (and the zod peer), shared by both projects
    deps = join(work, "deps");
    mkdirSync(deps);
    writeFileSync(
      join(deps, "package.json"),
      JSON.stringify({ name: "deps", private: true, type: "module" }),
    );
    // and esbuild, which a user's project has from wrangler, for `subagents-edge build`
    const { devDependencies } = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
    await run(
      "npm",
      [
        "install",
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        tarball,
        `zod@${devDependencies.zod}`,
        `esbuild@${devDependencies.esbuild}`,
      ],
      deps,
    );
  });

  after(async () => {
    for (const server of servers) await server.stop();
    if (work) removeDir(work);
  });

  /** A project folder: `files` written (or `from` copied), the shared node_modules linked in. */
  function project(name, { from, files = {} }) {
    const dir = join(work, name);
    if (from) cpSync(from, dir, { recursive: true });
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    symlinkSync(join(deps, "node_modules"), join(dir, "node_modules"), "dir");
    return dir;
  }

  it("ships built JavaScript and declarations only, with an exports map Node resolves", async () => {
    const files = (await run("tar", ["tzf", tarball], work)).trim().split("\n");
    assert.ok(files.includes("package/dist/worker.js"));
    assert.ok(files.includes("package/dist/client.js"));
    assert.ok(files.includes("package/dist/types/src/worker/index.d.ts"));
    const sources = files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"));
    assert.deepEqual(sources, [], "no TypeScript sources in the tarball");
    const manifest = JSON.parse(readFileSync(join(deps, "node_modules/subagents-edge/package.json"), "utf8"));
    assert.equal(manifest.sideEffects, false);
    assert.ok(manifest.peerDependencies.zod);
    assert.equal(manifest.private, undefined);
    // the client runs in Node from the package's own entry
    const client = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        'import("subagents-edge/client").then((m) => console.log(typeof m.SubagentsClient))',
      ],
      deps,
    );
    assert.equal(client.trim(), "function");
    // the package's command, installed as a bin
    const usage = await runCommand(join(deps, "node_modules/.bin/subagents-edge"), ["--help"], { cwd: deps });
    assert.match(usage.stderr, /usage: subagents-edge acp-bridge --port <port>/);
  });

  it("names no page it does not ship: every docs/*.md and relative link of its declarations and docs is in the tarball", async () => {
    const files = new Set(
      (await run("tar", ["tzf", tarball], work))
        .trim()
        .split("\n")
        .map((f) => f.replace(/^package\//, "")),
    );
    const installed = join(deps, "node_modules/subagents-edge");
    const readers = [...files].filter((f) => f.endsWith(".d.ts") || f.endsWith(".md"));
    assert.ok(readers.includes("dist/types/src/worker/index.d.ts") && readers.includes("README.md"));
    const missing = readers.flatMap((file) => {
      const text = readFileSync(join(installed, file), "utf8");
      const named = docsNamed(text).filter((page) => !files.has(page));
      const linked = file.endsWith(".md")
        ? relativeLinks(text)
            .map((target) => posix.normalize(posix.join(posix.dirname(file), target)))
            // the package's pages; a link into the repository (examples/, bench/) is for its readers
            .filter((target) => /^docs\/[^/]+\.md$/.test(target) && !files.has(target))
        : [];
      return [...named, ...linked].map((page) => `${file} -> ${page}`);
    });
    assert.deepEqual(missing, []);
    assert.ok(files.has("docs/embedding.md"), "the library surface's page ships");
  });

  describe("examples/notes-agent", () => {
    let dir;
    let server;
    let agents;

    before(async () => {
      dir = project("notes-agent", { from: join(REPO_ROOT, "examples", "notes-agent") });
      server = await startDevServer({ cwd: dir, basePath: "/agents" });
      servers.push(server);
      agents = mounted(server, "/agents");
    });

    it("typechecks against the packed declarations with the Env that `wrangler types` makes", async () => {
      await run(process.execPath, [join(REPO_ROOT, "node_modules/wrangler/bin/wrangler.js"), "types"], dir);
      await run(
        process.execPath,
        [join(REPO_ROOT, "node_modules/typescript/bin/tsc"), "--noEmit", "-p", "tsconfig.json"],
        dir,
      );
    });

    it("answers its own routes, the API under /agents and 404 elsewhere", async () => {
      const home = await fetch(`${server.url}/`);
      assert.equal(await home.text(), "notes-agent: the agents live under /agents/\n");
      const health = await api(agents, "GET", "/v1/health");
      assert.deepEqual(health.body, { ok: true, version: "0.1.0" });
      const root = await api(server, "GET", "/v1/health");
      assert.equal(root.status, 404);
      assert.equal(root.body.error.code, "NOT_FOUND");
    });

    it("serves the dashboard under the base path", async () => {
      const redirect = await fetch(`${server.url}/agents`, { redirect: "manual" });
      assert.equal(redirect.status, 308);
      assert.equal(new URL(redirect.headers.get("location")).pathname, "/agents/");
      const page = await fetch(`${server.url}/agents/`);
      assert.match(page.headers.get("content-type"), /^text\/html/);
      assert.match(await page.text(), /<script type="module" src="app.js">/);
      const app = await fetch(`${server.url}/agents/app.js`);
      assert.equal(app.status, 200);
      assert.match(app.headers.get("content-type"), /^text\/javascript/);
      assert.match(await app.text(), /SubagentsClient|EventStream/);
    });

    it("runs the Worker's tools from a session and from its child, over its KV namespace", async () => {
      const { id } = await createSession(agents);
      const title = `n-${crypto.randomUUID().slice(0, 8)}`;
      const saved = await turnOf(
        agents,
        id,
        script({ call: [{ tool: "save_note", args: { title, text: "milk and eggs" } }] }, { say: "saved" }),
      );
      const result = saved.find((e) => e.type === "tool/result");
      assert.deepEqual(result.data.content, [{ type: "text", text: `saved "${title}"` }]);
      assert.equal(result.data.isError, false);
      const notes = await (await fetch(`${server.url}/notes`)).json();
      assert.ok(notes.includes(title));

      // a child (spawn, one-shot) reads the note with the same tools
      const childPrompt = script({ call: [{ tool: "read_note", args: { title } }] }, { say: "read it" });
      const parent = await createSession(agents);
      const events = await turnOf(
        agents,
        parent.id,
        script(
          { call: [{ tool: "subagent", args: { description: "read", prompt: childPrompt } }] },
          { say: "ok" },
        ),
      );
      const end = events.find((e) => e.type === "subagent/end");
      assert.equal(end.data.stopReason, "completed");
      const children = await api(agents, "GET", `/v1/sessions/${parent.id}/children`);
      const child = children.body.entries[0].id;
      const childLog = await waitForEvents(agents, child, (es) => es.some((e) => e.type === "turn/end"));
      const read = childLog.find((e) => e.type === "tool/result");
      assert.deepEqual(read.data.content, [{ type: "text", text: "milk and eggs" }]);
    });

    it("gives a tool's bad input and its error result back to the model; the turn goes on", async () => {
      const { id } = await createSession(agents);
      const events = await turnOf(
        agents,
        id,
        script(
          { call: [{ tool: "save_note", args: { title: "" } }] },
          { call: [{ tool: "read_note", args: { title: "missing-note" } }] },
          { say: "went on" },
        ),
      );
      const [bad, missing] = events.filter((e) => e.type === "tool/result");
      assert.equal(bad.data.isError, true);
      assert.match(bad.data.content[0].text, /invalid arguments for save_note/);
      assert.deepEqual(missing.data, {
        toolCallId: missing.data.toolCallId,
        name: "read_note",
        content: [{ type: "text", text: 'no note "missing-note"' }],
        isError: true,
      });
      assert.equal(events.at(-1).data.reason, "completed");
    });

    it("serves a session's tools, the Worker's own among them, to an MCP client under the base path", async () => {
      const { id, token } = await createSession(agents);
      const client = new Client({ name: "e2e", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${server.url}/agents/v1/sessions/${id}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes("save_note") && names.includes("subagent"), names.join(", "));
      const title = `mcp-${crypto.randomUUID().slice(0, 8)}`;
      const saved = await client.callTool({
        name: "save_note",
        arguments: { title, text: "from an MCP client" },
      });
      assert.deepEqual(saved.content, [{ type: "text", text: `saved "${title}"` }]);
      const read = await client.callTool({ name: "read_note", arguments: { title } });
      assert.deepEqual(read.content, [{ type: "text", text: "from an MCP client" }]);
      await client.close();
    });

    it("serves its own model route, and refuses a route nobody serves", async () => {
      const { id } = await createSession(agents, { model: "shout" });
      const events = await turnOf(agents, id, "quiet please");
      const message = events.find((e) => e.type === "assistant/message");
      assert.deepEqual(message.data.content, [{ type: "text", text: "QUIET PLEASE" }]);
      const wrong = await api(agents, "POST", "/v1/sessions", { body: { model: "whisper" } });
      assert.equal(wrong.status, 400);
      assert.match(wrong.body.error.message, /unknown model route "whisper".*shout\[:<model>\]/);
    });
  });

  describe("the README's quick start, file for file", () => {
    let dir;
    let server;
    let agents;

    before(async () => {
      dir = project("quickstart", {
        files: {
          "package.json": JSON.stringify({ name: "my-agents", private: true, type: "module" }),
          "wrangler.toml": quickstartFile("wrangler.toml"),
          "src/worker.ts": quickstartFile("src/worker.ts"),
          "tsconfig.json": quickstartFile("tsconfig.json"),
        },
      });
      server = await startDevServer({ cwd: dir, basePath: "/agents" });
      servers.push(server);
      agents = mounted(server, "/agents");
    });

    it("typechecks with its own tsconfig.json after `wrangler types`, as the README says", async () => {
      await run(process.execPath, [join(REPO_ROOT, "node_modules/wrangler/bin/wrangler.js"), "types"], dir);
      await run(
        process.execPath,
        [join(REPO_ROOT, "node_modules/typescript/bin/tsc"), "--noEmit", "-p", "tsconfig.json"],
        dir,
      );
    });

    it("answers its own route, the API, the user's tool, the custom model and the dashboard", async () => {
      assert.equal(await (await fetch(`${server.url}/hello`)).text(), "hello from my worker");
      const { id } = await createSession(agents);
      const events = await turnOf(
        agents,
        id,
        script({ call: [{ tool: "weather", args: { city: "Lyon" } }] }, { say: "done" }),
      );
      const result = events.find((e) => e.type === "tool/result");
      assert.deepEqual(result.data.content, [{ type: "text", text: "It is 21 degrees in Lyon" }]);

      const custom = await createSession(agents, { model: "custom" });
      const answered = await turnOf(agents, custom.id, "hi");
      const message = answered.find((e) => e.type === "assistant/message");
      assert.deepEqual(message.data.content, [{ type: "text", text: "custom: hi" }]);

      const page = await fetch(`${server.url}/agents/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<title>subagents · dashboard<\/title>/);
    });
  });

  describe("the README's subagents-edge/core Worker", () => {
    let dir;
    let server;
    const WRANGLER = join(REPO_ROOT, "node_modules/wrangler/bin/wrangler.js");
    // the protocols' SDKs: MCP, A2A, ACP and the AI SDK providers of the openai: and workers-ai: routes
    const SDKS = [
      "@modelcontextprotocol/",
      "@a2a-js/",
      "@agentclientprotocol/",
      "@ai-sdk/",
      "workers-ai-provider/",
    ];

    /** A session under /agents answers a message, and an MCP client lists its tools on its MCP face. */
    async function answersAndServesMcp(on) {
      const at = mounted(on, "/agents");
      const { id, token } = await createSession(at);
      const answered = await turnOf(at, id, "hi");
      assert.ok(answered.some((e) => e.type === "assistant/message"));
      const client = new Client({ name: "e2e", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${on.url}/agents/v1/sessions/${id}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      assert.ok((await client.listTools()).tools.some((t) => t.name === "subagent"));
      await client.close();
    }

    /** The protocol SDK packages whose modules `wrangler deploy --dry-run` bundled for `worker`. */
    async function bundledSdks(worker) {
      writeFileSync(join(dir, "src/worker.ts"), worker);
      const out = join(dir, `out-${crypto.randomUUID().slice(0, 8)}`);
      await run(process.execPath, [WRANGLER, "deploy", "--dry-run", "--outdir", out], dir);
      const file = readdirSync(out).find((name) => name.endsWith(".js"));
      const bundle = readFileSync(join(out, file), "utf8");
      // esbuild heads each bundled module with a `// <path>/node_modules/<package>/<file>` comment
      const modules = bundle.match(/^\/\/ \S*node_modules\/\S+$/gm) ?? [];
      assert.ok(modules.length > 0, "the bundle names its modules");
      return SDKS.filter((sdk) => modules.some((line) => line.includes(`node_modules/${sdk}`)));
    }

    before(async () => {
      dir = project("core", {
        files: {
          "package.json": JSON.stringify({ name: "my-lean-agents", private: true, type: "module" }),
          "wrangler.toml": quickstartFile("wrangler.toml"),
          "src/worker.ts": quickstartFile("core-worker.ts"),
          "tsconfig.json": quickstartFile("tsconfig.json"),
        },
      });
    });

    it("bundles the SDK of the protocol it is given and none of the others; with none, no protocol SDK at all", async () => {
      const worker = quickstartFile("core-worker.ts");
      assert.deepEqual(await bundledSdks(worker), ["@modelcontextprotocol/"]);
      const bare = worker.replace("protocols: [mcp]", "protocols: []").replace(/^import \{ mcp \}.*\n/m, "");
      assert.notEqual(bare, worker);
      assert.deepEqual(await bundledSdks(bare), []);
      // the full entry, for contrast: every protocol's SDK
      const full = worker
        .replace('"subagents-edge/core"', '"subagents-edge/worker"')
        .replace(", protocols: [mcp]", "");
      assert.deepEqual(await bundledSdks(full), SDKS);
      writeFileSync(join(dir, "src/worker.ts"), worker);
    });

    it("serves the API and its MCP face; the A2A face it was not given answers 404, saying why", async () => {
      await run(process.execPath, [WRANGLER, "types"], dir);
      await run(
        process.execPath,
        [join(REPO_ROOT, "node_modules/typescript/bin/tsc"), "--noEmit", "-p", "tsconfig.json"],
        dir,
      );
      server = await startDevServer({ cwd: dir, basePath: "/agents" });
      servers.push(server);
      await answersAndServesMcp(server);

      const card = await fetch(`${server.url}/agents/.well-known/agent-card.json`);
      assert.equal(card.status, 404);
      const { error } = await card.json();
      assert.equal(error.code, "NOT_FOUND");
      assert.match(error.message, /does not speak A2A/);
    });

    it("split by `subagents-edge build` with the README's wrangler.toml: uploaded as modules, its start free of packages, served under wrangler dev", async () => {
      writeFileSync(join(dir, "wrangler.toml"), quickstartFile("split-wrangler.toml"));
      const out = join(dir, "out-split");
      const dryRun = await run(process.execPath, [WRANGLER, "deploy", "--dry-run", "--outdir", out], dir);
      // wrangler ran the build command (the package's bin, through npx) and uploads its modules
      const main = readFileSync(join(dir, "build/worker/index.js"), "utf8");
      const chunks = readdirSync(join(dir, "build/worker/chunks")).filter((name) => name.endsWith(".js"));
      assert.ok(chunks.length > 10, `the build split the Worker (${chunks.length} chunks)`);
      assert.match(dryRun, /chunks\/[\w-]+\.js/, "wrangler uploads the chunks as modules");
      assert.ok(readFileSync(join(dir, "build/worker/index.d.ts"), "utf8").includes("../../src/worker"));
      // the main module imports chunks holding the runtime's declarations and no other package's
      // code (no zod, no MCP SDK at start)
      const atStart = new Set();
      const pending = [...main.matchAll(/^import\b(?:[^;]*?\bfrom)?\s*"\.\/chunks\/([^"]+)"/gm)].map(
        (m) => m[1],
      );
      while (pending.length > 0) {
        const name = pending.pop();
        if (atStart.has(name)) continue;
        atStart.add(name);
        const text = readFileSync(join(dir, "build/worker/chunks", name), "utf8");
        for (const m of text.matchAll(/^import\b(?:[^;]*?\bfrom)?\s*"\.\/([^"]+)"/gm)) pending.push(m[1]);
      }
      for (const name of atStart)
        assert.doesNotMatch(
          readFileSync(join(dir, "build/worker/chunks", name), "utf8"),
          /^\/\/ \S*node_modules\/(?!subagents-edge\/)/m,
        );

      const split = await startDevServer({ cwd: dir, basePath: "/agents" });
      servers.push(split);
      await answersAndServesMcp(split);
    });
  });
});
