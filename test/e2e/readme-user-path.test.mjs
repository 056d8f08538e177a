// The README's path for a project of one's own names what that project needs, and what it names
// holds together: the Node version the package's `engines` asks for, a wrangler range whose
// lowest version is the one this repository tests with (and whose workerd runs the quickstart's
// `compatibility_date`), the same range in examples/notes-agent, and every file the quickstart's
// commands read. (test/e2e/package.test.mjs runs that quickstart, file for file.)
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { REPO_ROOT } from "./lib/dev-server.mjs";

const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
const json = (path) => JSON.parse(readFileSync(join(REPO_ROOT, path), "utf8"));
const manifest = json("package.json");
const ownWorker = readme.slice(
  readme.indexOf("## Use it in your own Worker"),
  readme.indexOf("### `createSubagents(options)`"),
);

describe("the README's path for a project of one's own", () => {
  it("names the Node version the package's engines ask for", () => {
    const engines = /^>=(\d+\.\d+)$/.exec(manifest.engines.node);
    assert.ok(engines, `engines.node is ${manifest.engines.node}`);
    assert.match(ownWorker, new RegExp(`Node ${engines[1].replace(".", "\\.")} or newer`));
    assert.doesNotMatch(ownWorker, /Node 20/);
  });

  it("installs wrangler from the version this repository tests with, whose workerd runs the quickstart's compatibility_date", () => {
    const tested = manifest.devDependencies.wrangler;
    const install = /npm install -D wrangler@(\S+) typescript/.exec(ownWorker);
    assert.ok(install, "the install line pins a wrangler range");
    assert.equal(install[1], `^${tested}`);
    assert.equal(json("examples/notes-agent/package.json").devDependencies.wrangler, `^${tested}`);
    // workerd 1.YYYYMMDD.n runs compatibility dates up to its own
    const workerd = json("node_modules/wrangler/package.json").dependencies.workerd;
    assert.equal(json("node_modules/wrangler/package.json").version, tested);
    const [, y, m, d] = /^1\.(\d{4})(\d{2})(\d{2})\./.exec(workerd);
    const date = /compatibility_date = "(\d{4}-\d{2}-\d{2})"/.exec(ownWorker)?.[1];
    assert.ok(date, "the quickstart's wrangler.toml has a compatibility_date");
    assert.ok(date <= `${y}-${m}-${d}`, `${date} is past what workerd ${workerd} runs`);
  });

  it("gives every file its commands read: wrangler.toml, src/worker.ts, tsconfig.json, then wrangler types and tsc", () => {
    for (const file of ["wrangler.toml", "src/worker.ts", "tsconfig.json"])
      assert.ok(ownWorker.includes(`<!-- quickstart:${file} -->`), `a quickstart block for ${file}`);
    const types = ownWorker.indexOf("npx wrangler types");
    const tsc = ownWorker.indexOf("npx tsc --noEmit");
    assert.ok(types >= 0 && tsc > types, "wrangler types comes before tsc");
  });
});
