// `npm run check:imports` (scripts/check-imports.mjs) fails for each rule it states. The script
// runs for real against a scratch copy of the folders it checks (its `root` argument): the copy
// as it is passes, and each planted violation, one at a time, makes it exit 1 naming that rule
// and only that violation.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { REPO_ROOT, removeDir, tempDir } from "./lib/dev-server.mjs";

const SCRIPT = join(REPO_ROOT, "scripts/check-imports.mjs");
/** The folders the script checks. */
const CHECKED = ["src", "durable-objects", "bench/worker"];

describe("the import checker", () => {
  let root;

  before(() => {
    root = tempDir("subagents-imports-");
    for (const dir of CHECKED) cpSync(join(REPO_ROOT, dir), join(root, dir), { recursive: true });
  });

  after(() => {
    if (root) removeDir(root);
  });

  /** Runs the checker on the copy with `files` (path -> text) added, then takes them away again. */
  function check(files = {}) {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    try {
      const result = spawnSync(process.execPath, [SCRIPT, root], { encoding: "utf8" });
      return { status: result.status, stdout: result.stdout, stderr: result.stderr };
    } finally {
      for (const path of Object.keys(files)) rmSync(join(root, path));
    }
  }

  /** Asserts the checker refused exactly one violation, whose line has every one of `parts`. */
  function assertRefused(result, ...parts) {
    assert.equal(result.status, 1, result.stdout);
    const [line, ...rest] = result.stderr.trim().split("\n");
    for (const part of parts) assert.ok(line.includes(part), `"${line}" names ${part}`);
    assert.match(rest.at(-1) ?? "", /^1 rule violation\(s\) in \d+ files$/, result.stderr);
  }

  it("passes the tree as it is", () => {
    const result = check();
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /no cycle, every layer, runtime and SQL rule holds/);
  });

  it("passes what the rules allow: SQL in a store, Workers words in prose and strings of a runtime-agnostic folder", () => {
    const result = check({
      "durable-objects/store/planted.ts": 'export const one = (sql: HostSql) => sql.exec("SELECT 1");\n',
      "src/core/planted.ts": [
        "// Env and DurableObjectState are named in this comment only, and `sql.exec(` too",
        "/** ExecutionContext */",
        `export const words = ["Env", \`DurableObjectStorage \${1 / 2} Fetcher\`, /Env"/.source];`,
        "",
      ].join("\n"),
    });
    assert.equal(result.status, 0, result.stderr);
  });

  it("refuses an import cycle", () => {
    const result = check({
      "src/core/planted-a.ts": 'import { b } from "./planted-b";\nexport const a = () => b;\n',
      "src/core/planted-b.ts": 'import { a } from "./planted-a";\nexport const b = () => a;\n',
    });
    assertRefused(result, "import cycle: src/core/planted-a.ts -> src/core/planted-b.ts");
  });

  it("refuses src/contract/ importing src/core/", () => {
    const result = check({
      "src/core/planted.ts": "export const x = 1;\n",
      "src/contract/planted.ts": 'export { x } from "../core/planted";\n',
    });
    assertRefused(result, "src/contract/planted.ts", "(src/contract/ depends on nothing)");
  });

  it("refuses src/core/ importing src/agent/", () => {
    const result = check({
      "src/agent/planted.ts": "export const x = 1;\n",
      "src/core/planted.ts": 'import { x } from "../agent/planted";\nexport const y = x;\n',
    });
    assertRefused(result, "src/core/planted.ts", "(src/core/ depends only on src/contract/)");
  });

  it("refuses durable-objects/ importing src/http/", () => {
    const result = check({
      "src/http/planted.ts": "export const x = 1;\n",
      "durable-objects/session/planted.ts":
        'import { x } from "../../src/http/planted";\nexport const y = x;\n',
    });
    assertRefused(result, "durable-objects/session/planted.ts", "(durable-objects/ never imports src/http/)");
  });

  it("refuses a file of src/ other than the composition root importing durable-objects/", () => {
    const result = check({
      "durable-objects/session/planted.ts": "export const x = 1;\n",
      "src/http/planted.ts":
        'import { x } from "../../durable-objects/session/planted";\nexport const y = x;\n',
    });
    assertRefused(
      result,
      "src/http/planted.ts",
      "(only the composition root reaches the Durable Object classes)",
    );
  });

  it("refuses the kernel importing a feature, and lets it import the host port and the stores", () => {
    const refused = check({
      "durable-objects/schedules/planted.ts": "export const x = 1;\n",
      "durable-objects/kernel/planted.ts": 'import { x } from "../schedules/planted";\nexport const y = x;\n',
    });
    assertRefused(
      refused,
      "durable-objects/kernel/planted.ts",
      "(durable-objects/kernel/ imports no feature",
    );
    const allowed = check({
      "durable-objects/kernel/planted.ts":
        'import type { HostSql } from "../host/port";\nimport type { EventLog } from "../store/event-log";\nexport type Both = [HostSql, EventLog];\n',
    });
    assert.equal(allowed.status, 0, allowed.stderr);
  });

  it("refuses the product importing bench/", () => {
    const result = check({
      "bench/worker/planted.ts": "export const x = 1;\n",
      "src/http/planted.ts": 'import { x } from "../../bench/worker/planted";\nexport const y = x;\n',
    });
    assertRefused(result, "src/http/planted.ts", "(the product never imports bench/)");
  });

  it("refuses a cloudflare: import in src/core/ (runtime-agnostic) and in src/ outside src/rpc/ and the shells", () => {
    assertRefused(
      check({ "src/core/planted.ts": 'import { env } from "cloudflare:workers";\nexport const x = env;\n' }),
      "src/core/planted.ts",
      "cloudflare:workers",
      "(a runtime-agnostic folder uses no cloudflare: import and no Workers type)",
    );
    assertRefused(
      check({ "src/http/planted.ts": 'import { env } from "cloudflare:workers";\nexport const x = env;\n' }),
      "src/http/planted.ts",
      "(src/ imports cloudflare: only in src/rpc/ and src/worker/object-shells.ts)",
    );
  });

  it("refuses a Workers type in the code of a runtime-agnostic folder", () => {
    const result = check({
      "src/providers/planted.ts":
        "// a comment may say Env\nexport type Planted = { storage: DurableObjectStorage };\n",
    });
    assertRefused(
      result,
      "src/providers/planted.ts:2",
      "DurableObjectStorage",
      "(a runtime-agnostic folder uses no cloudflare: import and no Workers type)",
    );
  });

  it("refuses SQL (an .exec( call) in durable-objects/session/", () => {
    const result = check({
      "durable-objects/session/planted.ts":
        '// not `.exec(` in a comment\nexport const one = (sql: HostSql) => sql.exec("SELECT 1");\n',
    });
    assertRefused(result, "durable-objects/session/planted.ts:2", "(SQL only in durable-objects/store/)");
  });

  it("refuses durable-objects/ outside durable-objects/cloudflare/ using the Workers runtime, and lets the adapter", () => {
    const rule =
      "(durable-objects/ uses no cloudflare: import, no Workers type and no stubs outside durable-objects/cloudflare/)";
    assertRefused(
      check({
        "durable-objects/session/planted.ts":
          'import { env } from "cloudflare:workers";\nexport const x = env;\n',
      }),
      "durable-objects/session/planted.ts",
      "cloudflare:workers",
      rule,
    );
    assertRefused(
      check({
        "durable-objects/store/planted.ts":
          "// a comment may say SqlStorage\nexport const one = (info: AlarmInvocationInfo) => info.retryCount;\n",
      }),
      "durable-objects/store/planted.ts:2",
      "AlarmInvocationInfo",
      rule,
    );
    assertRefused(
      check({
        "durable-objects/session/planted.ts":
          'import { sessionStub } from "../../src/platform/stubs";\nexport const x = sessionStub;\n',
      }),
      "durable-objects/session/planted.ts",
      "src/platform/stubs.ts",
      rule,
    );
    const adapter = check({
      "durable-objects/cloudflare/planted.ts": [
        'import { env } from "cloudflare:workers";',
        'import { sessionStub } from "../../src/platform/stubs";',
        "export const pair = (state: DurableObjectState) => [env, sessionStub, state, new WebSocketPair()];",
        "",
      ].join("\n"),
    });
    assert.equal(adapter.status, 0, adapter.stderr);
  });
});
