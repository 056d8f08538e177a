#!/usr/bin/env node
// Runs every test suite (workerd tests with vitest, then the end-to-end suites) and prints the
// plain closing line `N passed, N failed` that CI reads.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";

mkdirSync("test-results", { recursive: true });
const suites = [
  { name: "workers", cmd: "npx", args: ["vitest", "run", "--reporter=default", "--reporter=json", "--outputFile=test-results/workers.json"], report: "test-results/workers.json" },
  { name: "e2e", cmd: "node", args: ["--test", "--test-reporter=spec", "--test-reporter=./scripts/json-reporter.mjs", "--test-reporter-destination=stdout", "--test-reporter-destination=test-results/e2e.json", "test/e2e/"], report: "test-results/e2e.json", optional: !existsSync("test/e2e") },
];

let passed = 0;
let failed = 0;
for (const suite of suites) {
  if (suite.optional) continue;
  const run = spawnSync(suite.cmd, suite.args, { stdio: "inherit", env: { ...process.env, X_LOCAL_OBSERVABILITY: "false" } });
  let counted = false;
  if (existsSync(suite.report)) {
    try {
      const report = JSON.parse(readFileSync(suite.report, "utf8"));
      passed += report.numPassedTests ?? 0;
      failed += report.numFailedTests ?? 0;
      counted = true;
    } catch {
      // an unreadable report counts as a failed suite below
    }
  }
  if (run.status !== 0 && (!counted || failed === 0)) failed += 1;
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
