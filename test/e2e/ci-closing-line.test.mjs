// `.ci/run`'s closing line: CI reads the last line, `N passed, N failed`, so that line must count
// every failure, a failed static check included, and the lines just above it must name what
// failed. The script runs here for real, in a scratch copy of the repository's layout, with `npm`
// and `npx` replaced by stubs that pass or fail on demand (nothing is installed or tested).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { REPO_ROOT, removeDir, tempDir } from "./lib/dev-server.mjs";

const NPM_STUB = `#!/bin/sh
# npm as .ci/run calls it: each static check fails when its script is named in STUB_FAILING
case "$1" in
  --version) echo 11.0.0 ;;
  config) echo true ;;
  ci) exit 0 ;;
  run)
    case " $STUB_FAILING " in *" $2 "*) echo "$2: failed on purpose" >&2; exit 1 ;; esac
    exit 0 ;;
  test)
    printf '%s\\n' "$STUB_TEST_OUTPUT"
    exit "\${STUB_TEST_STATUS:-0}" ;;
esac
`;

const NPX_STUB = `#!/bin/sh
case "$*" in
  "--no-install node --version") echo v22.23.3 ;;
  *) exit 0 ;;
esac
`;

describe(".ci/run's closing line", () => {
  let work;
  let stubs;

  before(() => {
    work = tempDir("subagents-ci-");
    mkdirSync(join(work, ".ci"));
    copyFileSync(join(REPO_ROOT, ".ci/run"), join(work, ".ci/run"));
    chmodSync(join(work, ".ci/run"), 0o755);
    // the committed types file, as the types check expects to find it
    const types = readFileSync(join(REPO_ROOT, "worker-configuration.d.ts"), "utf8");
    writeFileSync(join(work, "worker-configuration.d.ts"), types);
    stubs = join(work, "stubs");
    mkdirSync(stubs);
    writeFileSync(join(stubs, "npm"), NPM_STUB);
    writeFileSync(join(stubs, "npx"), NPX_STUB);
    chmodSync(join(stubs, "npm"), 0o755);
    chmodSync(join(stubs, "npx"), 0o755);
  });

  after(() => {
    if (work) removeDir(work);
  });

  /** Runs the script with the stubs; its stdout's lines and its exit status. */
  function ci({ failing = [], testOutput, testStatus = 0 }) {
    const result = spawnSync("bash", [join(work, ".ci/run")], {
      cwd: work,
      encoding: "utf8",
      timeout: 60_000,
      env: {
        ...process.env,
        PATH: `${stubs}:${process.env.PATH}`,
        STUB_FAILING: failing.join(" "),
        STUB_TEST_OUTPUT: testOutput,
        STUB_TEST_STATUS: String(testStatus),
      },
    });
    assert.equal(result.error, undefined);
    return { lines: result.stdout.trimEnd().split("\n"), status: result.status, stderr: result.stderr };
  }

  it("ends with the tests' own closing line when everything passed", () => {
    const run = ci({ testOutput: "suite output\n12 passed, 0 failed" });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.lines.at(-1), "12 passed, 0 failed");
    assert.ok(!run.lines.includes("FAILED:"));
  });

  it("counts a failed static check as a failed test and names it just above the closing line", () => {
    const run = ci({ failing: ["lint"], testOutput: "12 passed, 0 failed" });
    assert.equal(run.status, 1);
    assert.equal(run.lines.at(-1), "12 passed, 1 failed");
    assert.deepEqual(run.lines.slice(-3, -1), ["FAILED:", "  static check: npm run lint"]);
  });

  it("adds failed checks to failed tests", () => {
    const run = ci({
      failing: ["typecheck", "format:check"],
      testOutput: "10 passed, 2 failed",
      testStatus: 1,
    });
    assert.equal(run.status, 1);
    assert.equal(run.lines.at(-1), "10 passed, 4 failed");
    assert.deepEqual(run.lines.slice(-4, -1), [
      "FAILED:",
      "  static check: npm run typecheck",
      "  static check: npm run format:check",
    ]);
  });

  it("counts a test run that ended without its closing line as a failure", () => {
    const run = ci({ testOutput: "crashed half way", testStatus: 1 });
    assert.equal(run.status, 1);
    assert.equal(run.lines.at(-1), "0 passed, 1 failed");
    assert.match(run.lines.at(-2), /npm test: no closing line/);
  });
});
