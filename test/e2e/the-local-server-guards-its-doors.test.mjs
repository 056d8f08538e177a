// The local server's doors of issue 23, against a real `wrangler dev` configured as `npm start`
// configures it (scripts/start.mjs): a Host that is not a loopback name is refused (DNS
// rebinding), the dashboard runs in a real browser under its Content-Security-Policy without a
// single violation, `npm start` never uses a short or well-known admin token, and `.dev.vars` (the
// local secrets) is not tracked by git.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { request } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { chooseAdminToken, LOOPBACK_HOSTS, wranglerArgs } from "../../scripts/start.mjs";
import { api, createSession } from "./lib/api.mjs";
import { launchBrowser } from "./lib/browser.mjs";
import { REPO_ROOT, removeDir, startDevServer, tempDir } from "./lib/dev-server.mjs";

const STEP_MS = 20_000;

/** GET `path` with the given `Host` header (fetch cannot set it): status and parsed body. */
function getWithHost(server, path, host) {
  return new Promise((resolvePromise, reject) => {
    const req = request(
      { host: "127.0.0.1", port: server.port, path, headers: { host }, timeout: 10_000 },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (chunk) => {
          text += chunk;
        });
        res.on("end", () =>
          resolvePromise({ status: res.statusCode, body: text ? JSON.parse(text) : undefined }),
        );
      },
    );
    req.on("timeout", () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on("error", reject);
    req.end();
  });
}

describe("npm start's choices (scripts/start.mjs)", () => {
  it("refuses an admin token shorter than 16 characters from the environment or .dev.vars", () => {
    assert.match(chooseAdminToken({ ADMIN_TOKEN: "x".repeat(15) }, undefined).error, /15 characters.*16/);
    assert.match(chooseAdminToken({}, "ADMIN_TOKEN=short-token\n").error, /\.dev\.vars has 11 characters/);
    assert.deepEqual(chooseAdminToken({ ADMIN_TOKEN: "y".repeat(16) }, "ADMIN_TOKEN=z\n"), {
      token: "y".repeat(16),
      source: "environment",
    });
    assert.deepEqual(chooseAdminToken({}, 'OPENAI_API_KEY=k\nADMIN_TOKEN="a-long-local-admin-token"\n'), {
      token: "a-long-local-admin-token",
      source: ".dev.vars",
    });
  });

  it("generates a long random token when none is set, or when .dev.vars holds the old well-known one, and keeps it in .dev.vars", () => {
    const fresh = chooseAdminToken({}, undefined);
    assert.equal(fresh.source, "generated");
    assert.ok(fresh.token.length >= 43, fresh.token);
    assert.equal(fresh.devVars, `ADMIN_TOKEN=${fresh.token}\n`);
    assert.notEqual(chooseAdminToken({}, undefined).token, fresh.token);
    const replaced = chooseAdminToken({}, "ADMIN_TOKEN=dev-admin-token\nOPENAI_API_KEY=k\n");
    assert.notEqual(replaced.token, "dev-admin-token");
    assert.equal(replaced.devVars, `ADMIN_TOKEN=${replaced.token}\nOPENAI_API_KEY=k\n`);
    const appended = chooseAdminToken({}, "OPENAI_API_KEY=k");
    assert.equal(appended.devVars, `OPENAI_API_KEY=k\nADMIN_TOKEN=${appended.token}\n`);
  });

  it("passes the loopback names as ALLOWED_HOSTS to wrangler dev, as npm run dev does", () => {
    const args = wranglerArgs({ port: "8787", token: "t".repeat(20), allowedHosts: LOOPBACK_HOSTS });
    assert.ok(args.includes("ALLOWED_HOSTS:localhost,127.0.0.1,[::1]"), args.join(" "));
    // a token wrangler reads from .dev.vars never goes on the command line (`ps` shows it)
    for (const source of [".dev.vars", "generated"]) {
      const fromFile = wranglerArgs({ port: "8787", token: "t".repeat(20), allowedHosts: "", source });
      assert.ok(!fromFile.some((a) => a.includes("t".repeat(20))), fromFile.join(" "));
    }
    const scripts = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).scripts;
    // `npm run dev` as sh runs it, with a stand-in wrangler that prints its arguments
    const devArgs = (env) =>
      execFileSync("sh", ["-c", `wrangler() { printf '%s\\n' "$@"; }; ${scripts.dev}`], {
        env: { PATH: process.env.PATH, ...env },
        encoding: "utf8",
      }).split("\n");
    assert.ok(devArgs({}).includes("ALLOWED_HOSTS:localhost,127.0.0.1,[::1]"), devArgs({}).join(" "));
    assert.ok(devArgs({ ALLOWED_HOSTS: "my.host" }).includes("ALLOWED_HOSTS:my.host"));
  });

  it("keeps .dev.vars out of git and ships .dev.vars.example documenting every secret", () => {
    const git = (...args) => execFileSync("git", args, { cwd: REPO_ROOT, encoding: "utf8" });
    assert.equal(git("ls-files", "--", ".dev.vars"), "");
    assert.equal(git("check-ignore", "--no-index", ".dev.vars").trim(), ".dev.vars");
    assert.equal(git("ls-files", "--", ".dev.vars.example").trim(), ".dev.vars.example");
    const example = readFileSync(join(REPO_ROOT, ".dev.vars.example"), "utf8");
    for (const name of ["ADMIN_TOKEN", "OPENAI_API_KEY", "TENANT_TOKENS"])
      assert.match(example, new RegExp(`^# ${name}=$`, "m"));
  });
});

describe("the local server with npm start's ALLOWED_HOSTS", { timeout: 300_000 }, () => {
  let server;
  let dir;
  let profile;
  let context;

  before(async () => {
    dir = tempDir();
    profile = tempDir("subagents-chromium-");
    server = await startDevServer({ persistTo: dir, vars: { ALLOWED_HOSTS: LOOPBACK_HOSTS } });
  });

  after(async () => {
    await context?.close().catch(() => {});
    await server?.stop();
    if (dir) removeDir(dir);
    if (profile) removeDir(profile);
  });

  it("answers the loopback names on its port and refuses any other Host with 403 before routing", async () => {
    for (const host of [`127.0.0.1:${server.port}`, `localhost:${server.port}`, `[::1]:${server.port}`]) {
      assert.equal((await getWithHost(server, "/v1/health", host)).status, 200, host);
    }
    for (const path of ["/v1/health", "/", "/v1/sessions"]) {
      const refused = await getWithHost(server, path, `evil.example:${server.port}`);
      assert.equal(refused.status, 403, path);
      assert.equal(refused.body.error.code, "UNAUTHORIZED");
      assert.match(refused.body.error.message, /ALLOWED_HOSTS/);
    }
  });

  it("runs the dashboard under its CSP without a violation, the tree indented by depth", async () => {
    const page0 = await fetch(`${server.url}/`);
    assert.match(page0.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
    assert.equal(page0.headers.get("x-frame-options"), "DENY");

    const parent = await createSession(server, { label: "csp parent" });
    const started = await api(server, "POST", `/v1/sessions/${parent.id}/subagents`, {
      body: { provider: "spawn", mode: "one-shot", prompt: "hi" },
    });
    assert.equal(started.status, 201, JSON.stringify(started.body));

    context = await launchBrowser(profile, { viewport: { width: 1280, height: 860 } });
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(STEP_MS);
    const violations = [];
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    await page.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (event) => {
        console.error(`Content Security Policy violation: ${event.violatedDirective} ${event.blockedURI}`);
      });
    });
    await page.goto(`${server.url}/#root=${parent.id}&session=${parent.id}`);
    await page.fill('input[name="token"]', server.token);
    await page.press('input[name="token"]', "Enter");
    await page.waitForSelector("#dashboard:not([hidden])");
    // the live event stream (a same-origin WebSocket) opens under connect-src
    await page.waitForSelector('#live[data-state="open"]');
    const child = page.locator(`#tree [data-session-id="${started.body.id}"][data-depth="1"]`);
    await child.waitFor();
    const indent = await child.evaluate((el) => Number.parseFloat(getComputedStyle(el).paddingLeft));
    assert.ok(indent > 0, `a depth-1 row is indented (padding-left ${indent}px)`);
    assert.deepEqual(violations, []);
  });
});
