// A Worker whose wrangler.toml creates the runtime's Durable Object classes with `new_classes`
// (key-value storage) instead of `new_sqlite_classes`, run by a real `wrangler dev`: every API
// request that reaches an object answers `500 MISCONFIGURED` with a message naming the migration
// to write, instead of an opaque `500 INTERNAL`. The project is a temp folder whose wrangler.toml
// runs this repository's Worker entry.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { REPO_ROOT, removeDir, startDevServer, tempDir } from "./lib/dev-server.mjs";

const WRANGLER_TOML = `name = "subagents-without-sqlite"
main = ${JSON.stringify(join(REPO_ROOT, "src/index.ts"))}
compatibility_date = "2026-11-01"
compatibility_flags = ["nodejs_compat"]

[[durable_objects.bindings]]
name = "SESSIONS"
class_name = "SessionObject"

[[durable_objects.bindings]]
name = "REGISTRY"
class_name = "RegistryObject"

[[migrations]]
tag = "v1"
new_classes = ["SessionObject", "RegistryObject"]
`;

let project;
let server;

before(async () => {
  project = tempDir("subagents-no-sqlite-");
  writeFileSync(join(project, "wrangler.toml"), WRANGLER_TOML);
  server = await startDevServer({ cwd: project });
});

after(async () => {
  await server?.stop();
  if (project) removeDir(project);
});

it("answers 500 MISCONFIGURED naming new_sqlite_classes on routes that reach the objects", async () => {
  const headers = { authorization: `Bearer ${server.token}`, "content-type": "application/json" };
  for (const [method, path] of [
    ["POST", "/v1/sessions"],
    ["GET", "/v1/sessions"],
    ["GET", "/v1/providers"],
  ]) {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers,
      ...(method === "POST" ? { body: "{}" } : {}),
      signal: AbortSignal.timeout(20_000),
    });
    const body = await response.json();
    assert.equal(response.status, 500, `${method} ${path}`);
    assert.equal(body.error.code, "MISCONFIGURED", `${method} ${path}: ${JSON.stringify(body)}`);
    assert.match(body.error.message, /new_sqlite_classes/);
  }
  // what needs no object still answers
  assert.equal((await fetch(`${server.url}/v1/health`)).status, 200);
});
