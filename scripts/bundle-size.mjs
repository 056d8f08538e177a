#!/usr/bin/env node
// `npm run bundle-size`: the size of this repository's Worker as `wrangler deploy` would upload
// it (`wrangler deploy --dry-run`, offline), at HEAD and at a baseline commit, and of a Worker on
// `subagents-edge/core` with no protocol (bench/startup/minimal) at HEAD, each measured on a clean
// checkout of its commit (uncommitted edits in this tree change none), written into the README
// between the bundle-size markers with the commits.
//   npm run bundle-size                      baseline: the last commit before the runtime became a library
//   npm run bundle-size -- --baseline=<ref>  another baseline
//   npm run bundle-size -- --working-tree    measure this working tree instead of HEAD (noted as such)
//   npm run bundle-size -- --no-readme       print only
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { writeBlock } from "./lib/readme-block.mjs";

const ROOT = resolve(import.meta.dirname, "..");
const args = new Map(
  process.argv.slice(2).map((a) => {
    const [key, value] = a.replace(/^--/, "").split("=");
    return [key, value ?? "true"];
  }),
);
/** The runtime as a closed application: its Worker before `createSubagents`, the AI SDK and the embedded dashboard. */
const BASELINE = args.get("baseline") ?? "4f49b43";

const git = (...a) => execFileSync("git", a, { cwd: ROOT, encoding: "utf8" }).trim();

/** `wrangler deploy --dry-run` in `dir`: the upload size and its gzip size as wrangler reports them. */
function measure(dir) {
  const out = mkdtempSync(join(tmpdir(), "subagents-size-"));
  try {
    const output = execFileSync(
      process.execPath,
      [join(ROOT, "node_modules/wrangler/bin/wrangler.js"), "deploy", "--dry-run", "--outdir", out],
      {
        cwd: dir,
        encoding: "utf8",
        env: { ...process.env, WRANGLER_SEND_METRICS: "false", FORCE_COLOR: "0" },
      },
    );
    const match = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(output);
    if (!match) throw new Error(`wrangler did not report a size:\n${output}`);
    return { kib: Number(match[1]), gzipKib: Number(match[2]) };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** The same measurement on a clean checkout of `ref` (a worktree sharing this node_modules), in `sub` of it. */
function measureAt(ref, sub = ".") {
  const dir = mkdtempSync(join(tmpdir(), "subagents-baseline-"));
  rmSync(dir, { recursive: true, force: true });
  git("worktree", "add", "--detach", dir, ref);
  try {
    symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
    return measure(join(dir, sub));
  } finally {
    git("worktree", "remove", "--force", dir);
  }
}

const head = git("rev-parse", "--short", "HEAD");
const workingTree = args.get("working-tree") === "true";
const dirty =
  workingTree && git("status", "--porcelain", "--", "src", "durable-objects", "package.json") !== "";
const baselineCommit = git("rev-parse", "--short", BASELINE);
const before = measureAt(BASELINE);
const now = workingTree ? measure(ROOT) : measureAt("HEAD");
const MINIMAL = "bench/startup/minimal";
const core = workingTree ? measure(join(ROOT, MINIMAL)) : measureAt("HEAD", MINIMAL);
const pct = (a, b) => `${b >= a ? "+" : ""}${(((b - a) / a) * 100).toFixed(0)}%`;
const lines = [
  "| Worker (`wrangler deploy --dry-run`) | upload | gzip |",
  "|---|---|---|",
  `| before: the runtime as an application, at ${baselineCommit} | ${before.kib.toFixed(0)} KiB | ${before.gzipKib.toFixed(0)} KiB |`,
  `| now: \`createSubagents\` (\`subagents-edge/worker\`) with the AI SDK providers, the MCP, ACP and A2A SDKs and the embedded dashboard, at ${head}${dirty ? " (uncommitted changes)" : ""} | ${now.kib.toFixed(0)} KiB | ${now.gzipKib.toFixed(0)} KiB |`,
  `| change | ${pct(before.kib, now.kib)} | ${pct(before.gzipKib, now.gzipKib)} |`,
  `| \`subagents-edge/core\` with no protocol (${MINIMAL}): no MCP, ACP or A2A SDK, no AI SDK provider, at ${head}${dirty ? " (uncommitted changes)" : ""} | ${core.kib.toFixed(0)} KiB | ${core.gzipKib.toFixed(0)} KiB |`,
  "",
  `Written by \`npm run bundle-size\` on ${new Date().toISOString().slice(0, 10)}. Workers accept 3 MiB (free plan) or 10 MiB (paid) after gzip.`,
];
console.log(lines.join("\n"));
if (args.get("no-readme") !== "true") {
  const path = join(ROOT, "README.md");
  writeBlock(path, "bundle-size", lines.join("\n"));
  console.log("wrote README.md");
}
