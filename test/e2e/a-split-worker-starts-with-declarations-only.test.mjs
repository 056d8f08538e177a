// What a Worker's start compiles once `subagents-edge build` (cli/build.mjs) splits it: the main
// module and the modules it imports statically. The classes `createSubagents` returns load their
// implementations when an instance first needs them and the HTTP router loads with the first API
// request (src/worker/object-shells.ts, create-subagents.ts), so a start holds declarations only:
// no zod, no session engine, no router, no protocol SDK. Checked on this repository's Worker
// (every protocol) and on the newcomer's Worker of bench/startup/minimal, both built by the CLI;
// and the command's answers to bad input.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { after, describe, it } from "node:test";
import { join } from "node:path";
import { promisify } from "node:util";
import { buildWorker } from "../../cli/build.mjs";
import { REPO_ROOT, removeDir, tempDir } from "./lib/dev-server.mjs";

/** The inputs of the outputs a start compiles: `index.js` and its static imports, transitively. */
function compiledAtStart(metafile, outdir) {
  const main = Object.keys(metafile.outputs).find((path) => path.endsWith(`${outdir}/index.js`));
  assert.ok(main, "the build wrote index.js");
  const seen = new Set();
  const pending = [main];
  while (pending.length > 0) {
    const path = pending.pop();
    if (seen.has(path)) continue;
    seen.add(path);
    for (const imported of metafile.outputs[path].imports)
      if (imported.kind === "import-statement" && !imported.external) pending.push(imported.path);
  }
  const inputs = new Set();
  let bytes = 0;
  for (const path of seen) {
    bytes += metafile.outputs[path].bytes;
    for (const [input, { bytesInOutput }] of Object.entries(metafile.outputs[path].inputs))
      if (bytesInOutput > 0) inputs.add(input);
  }
  return { inputs: [...inputs], bytes, outputs: Object.keys(metafile.outputs).length };
}

describe("a split Worker's start compiles declarations only", () => {
  const work = tempDir("subagents-split-");
  after(() => removeDir(work));

  for (const [name, entry] of [
    ["this repository's Worker", "src/index.ts"],
    ["the newcomer's subagents-edge/core Worker", "bench/startup/minimal/src/worker.ts"],
  ])
    it(`${name}: no zod, no session engine, no router, no protocol SDK at start; every part a module of its own`, async () => {
      const outdir = join(work, name.replace(/\W+/g, "-"));
      const metafile = await buildWorker({ root: REPO_ROOT, entry, outdir });
      const start = compiledAtStart(metafile, outdir.split("/").pop());
      const held = (pattern) => start.inputs.filter((input) => pattern.test(input));
      assert.deepEqual(held(/node_modules\//), [], "no package's code at start");
      assert.deepEqual(held(/src\/http\/app\.ts|src\/rpc\/entrypoint\.ts/), [], "no router, no entrypoint");
      // of the objects, a start holds only the declarations of the session's RPC methods (the
      // shells read their names) and what a declaration imports: never an object or a part
      const declarations =
        /-methods\.ts$|durable-objects\/kernel\/methods\.ts$|durable-objects\/delegation\/tree-places\.ts$/;
      assert.deepEqual(
        held(/durable-objects\//).filter((input) => !declarations.test(input)),
        [],
        "no session engine",
      );
      assert.ok(held(/src\/worker\/object-shells\.ts/).length === 1, "the shells are what a start runs");
      assert.ok(start.bytes < 64 * 1024, `a start compiles ${start.bytes} bytes`);
      // the parts are there, as modules loaded on first use
      const all = Object.values(metafile.outputs).flatMap((o) => Object.keys(o.inputs));
      assert.ok(all.some((input) => input.endsWith("durable-objects/session/session-object.ts")));
      assert.ok(all.some((input) => input.includes("node_modules/zod/")));
      assert.ok(start.outputs > 10, "the build is split");
    });
});

describe("`subagents-edge build` on the command line", () => {
  const CLI = join(REPO_ROOT, "cli/subagents-edge.mjs");
  const work = tempDir("subagents-split-cli-");
  after(() => removeDir(work));
  const cli = (...args) =>
    promisify(execFile)(process.execPath, [CLI, "build", ...args], { cwd: REPO_ROOT }).then(
      ({ stderr }) => ({ code: 0, stderr }),
      (error) => ({ code: error.code, stderr: error.stderr }),
    );

  it("refuses a missing entry, an unknown option and an entry that does not exist, writing nothing", async () => {
    const outdir = join(work, "refused");
    for (const [args, said] of [
      [[], /an entry is needed/],
      [["src/index.ts", "--minify"], /unexpected argument "--minify"/],
      [["src/nothing-here.ts", "--outdir", outdir], /no such entry: src\/nothing-here\.ts/],
    ]) {
      const { code, stderr } = await cli(...args);
      assert.equal(code, 1, args.join(" "));
      assert.match(stderr, said);
    }
    assert.equal(existsSync(outdir), false);
  });

  it("writes the split Worker and its types, and says where", async () => {
    const outdir = join(work, "built");
    const { code, stderr } = await cli("bench/startup/minimal/src/worker.ts", "--outdir", outdir);
    assert.equal(code, 0, stderr);
    assert.match(stderr, /-> .*built\/index\.js \(\d+ modules\)/);
    assert.match(readFileSync(join(outdir, "index.js"), "utf8"), /export \{[^}]*SessionObject/);
    assert.match(
      readFileSync(join(outdir, "index.d.ts"), "utf8"),
      /export \* from ".*bench\/startup\/minimal\/src\/worker"/,
    );
  });
});
