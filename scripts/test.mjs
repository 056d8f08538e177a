#!/usr/bin/env node
// `npm test`: runs every test suite (workerd tests with vitest, then the end-to-end suites over a
// real `wrangler dev`) and prints, as its very last line, the plain closing line CI reads:
//   N passed, N failed
// Each suite writes a JSON report into a fresh directory of this run (copied to test-results/
// afterwards). A suite that exits non-zero without reporting a failure (it crashed, did not load,
// wrote no report or a broken one, or timed out) counts as one failed test, and so does a suite
// that ran no test at all. The exit code is non-zero on any failure.
//
// `npm test -- e2e` (or `workers`) runs only the named suites.
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";

const [major] = process.versions.node.split(".").map(Number);
if (major < 22) {
  console.error(
    `npm test needs Node 22 (this is ${process.version}): run it through npm so node_modules/.bin comes first.`,
  );
  console.log("0 passed, 1 failed");
  process.exit(1);
}

const SUITE_TIMEOUT_MS = Number(process.env.TEST_SUITE_TIMEOUT_MS ?? 30 * 60_000);
const root = resolve(import.meta.dirname, "..");
process.chdir(root);
const reports = mkdtempSync(join(tmpdir(), "subagents-test-"));

const suites = [
  {
    name: "workers",
    cmd: "npx",
    args: [
      "vitest",
      "run",
      "--reporter=default",
      "--reporter=json",
      `--outputFile.json=${join(reports, "workers.json")}`,
    ],
    report: join(reports, "workers.json"),
  },
  {
    // the runtime inside another Worker (test/embedding/worker.ts): tools, models, mounting
    name: "embedding",
    cmd: "npx",
    args: [
      "vitest",
      "run",
      "-c",
      "vitest.embedding.config.ts",
      "--reporter=default",
      "--reporter=json",
      `--outputFile.json=${join(reports, "embedding.json")}`,
    ],
    report: join(reports, "embedding.json"),
  },
  {
    // the seeded fault campaign (200 schedules, about 2 minutes): its summary line and
    // test-results/faults.json come from its own reporter
    name: "fault-campaign",
    cmd: "npx",
    args: [
      "vitest",
      "run",
      "-c",
      "vitest.faults.config.ts",
      "--reporter=default",
      "--reporter=./test/faults/reporter.ts",
      "--reporter=json",
      `--outputFile.json=${join(reports, "fault-campaign.json")}`,
    ],
    report: join(reports, "fault-campaign.json"),
  },
  {
    name: "e2e",
    cmd: process.execPath,
    args: [
      "--test",
      // one file at a time: every file starts its own wrangler dev servers
      "--test-concurrency=1",
      "--test-timeout=600000",
      "--test-reporter=spec",
      "--test-reporter-destination=stdout",
      "--test-reporter=./scripts/json-reporter.mjs",
      `--test-reporter-destination=${join(reports, "e2e.json")}`,
      "test/e2e/**/*.test.mjs",
    ],
    report: join(reports, "e2e.json"),
  },
];

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !suites.some((s) => s.name === name));
if (unknown.length > 0) {
  console.error(`unknown suite(s): ${unknown.join(", ")} (known: ${suites.map((s) => s.name).join(", ")})`);
  console.log("0 passed, 1 failed");
  process.exit(1);
}

const env = {
  ...process.env,
  // the project's Node 22 first, also when this script was not started through npm
  PATH: [join(root, "node_modules", ".bin"), process.env.PATH].join(delimiter),
  X_LOCAL_OBSERVABILITY: "false",
  WRANGLER_SEND_METRICS: "false",
};

let interrupted = null;

/** Whether a process group still has a live (non-zombie) member; reads /proc, falls back to kill(0). */
function groupAlive(pgid) {
  let entries;
  try {
    entries = readdirSync("/proc");
  } catch {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] !== "Z" && Number(fields[2]) === pgid) return true;
    } catch {
      // exited meanwhile
    }
  }
  return false;
}

/** Runs a command in its own process group; on timeout or our own interruption the group is killed. */
function run(cmd, args, timeoutMs) {
  return new Promise((resolveRun) => {
    const child = spawn(cmd, args, { stdio: "inherit", env, detached: true });
    let timedOut = false;
    const killGroup = (signal) => {
      try {
        process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup("SIGTERM");
      setTimeout(() => killGroup("SIGKILL"), 10_000).unref();
    }, timeoutMs);
    const forward = (signal) => {
      interrupted = signal;
      killGroup(signal);
    };
    process.on("SIGINT", forward);
    process.on("SIGTERM", forward);
    child.on("error", (error) => {
      console.error(`could not start ${cmd}: ${error.message}`);
    });
    child.on("close", async (code, signal) => {
      clearTimeout(timer);
      process.off("SIGINT", forward);
      process.off("SIGTERM", forward);
      // Leftovers of the group (a test file still cleaning up after an interruption, a workerd
      // whose parent died) must not outlive the suite: SIGTERM, a grace period, then SIGKILL.
      if (groupAlive(child.pid)) {
        killGroup("SIGTERM");
        const deadline = Date.now() + 5_000;
        while (groupAlive(child.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        killGroup("SIGKILL");
      }
      resolveRun({ code, signal, timedOut });
    });
  });
}

function readReport(path) {
  if (!existsSync(path)) return { problem: "it wrote no report" };
  try {
    const report = JSON.parse(readFileSync(path, "utf8"));
    const passed = report.numPassedTests;
    const failed = report.numFailedTests;
    if (!Number.isInteger(passed) || !Number.isInteger(failed))
      return { problem: "its report has no test counts" };
    return { passed, failed, failures: failuresOf(report) };
  } catch (error) {
    return { problem: `its report is unreadable (${error.message})` };
  }
}

/** Failed tests named in a report: ours (json-reporter.mjs) or vitest's JSON (jest's shape). */
function failuresOf(report) {
  if (Array.isArray(report.failures)) return report.failures;
  const out = [];
  for (const file of report.testResults ?? []) {
    for (const test of file.assertionResults ?? []) {
      if (test.status !== "failed") continue;
      out.push({
        name: `${file.name?.replace(`${root}/`, "") ?? ""} > ${test.fullName}`,
        message: String(test.failureMessages?.[0] ?? ""),
      });
    }
    if (file.status === "failed" && (file.assertionResults ?? []).length === 0) {
      out.push({
        name: file.name?.replace(`${root}/`, "") ?? "a test file",
        message: String(file.message ?? ""),
      });
    }
  }
  return out;
}

let passed = 0;
let failed = 0;
const notes = [];
mkdirSync("test-results", { recursive: true });
for (const suite of suites) {
  if (wanted.length > 0 && !wanted.includes(suite.name)) continue;
  console.log(`\n=== ${suite.name} ===`);
  const started = Date.now();
  const result = await run(suite.cmd, suite.args, SUITE_TIMEOUT_MS);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const counted = readReport(suite.report);
  if (existsSync(suite.report)) copyFileSync(suite.report, join("test-results", `${suite.name}.json`));
  const suitePassed = counted.passed ?? 0;
  let suiteFailed = counted.failed ?? 0;
  const exit = result.signal ? `signal ${result.signal}` : `exit code ${result.code}`;
  if (interrupted) {
    suiteFailed += 1;
    notes.push(`${suite.name}: interrupted (${interrupted})`);
  } else if (result.timedOut) {
    suiteFailed += 1;
    notes.push(`${suite.name}: killed after ${SUITE_TIMEOUT_MS} ms`);
  } else if (counted.problem) {
    suiteFailed += 1;
    notes.push(`${suite.name}: ${exit} and ${counted.problem}`);
  } else if (result.code !== 0 && suiteFailed === 0) {
    suiteFailed += 1;
    notes.push(
      `${suite.name}: ${exit} although no test failed (a crash, a file that did not load, or a failed hook)`,
    );
  } else if (suitePassed + suiteFailed === 0) {
    suiteFailed += 1;
    notes.push(`${suite.name}: ran no test`);
  }
  for (const f of counted.failures ?? []) {
    const reason = [f.failureType, String(f.message ?? "").split("\n")[0]].filter(Boolean).join(": ");
    notes.push(`${suite.name}: FAILED ${f.name}${reason ? ` (${reason})` : ""}`);
  }
  console.log(`=== ${suite.name}: ${suitePassed} passed, ${suiteFailed} failed (${exit}, ${seconds} s) ===`);
  passed += suitePassed;
  failed += suiteFailed;
  if (interrupted) break;
}
rmSync(reports, { recursive: true, force: true });

if (notes.length > 0) console.log(`\n${notes.join("\n")}`);
if (passed + failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
