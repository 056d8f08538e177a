#!/usr/bin/env node
// `npm run test:faults` ends here: writes the README's reliability block (between the
// reliability markers) from test-results/faults.json, the figures the campaign's reporter wrote
// for the run that just finished, with the commit they were measured at. Only a full campaign
// (every seed, no FAULT_SEED replay) rewrites the block; a replay leaves it as it is.
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { writeBlock } from "./lib/readme-block.mjs";

const ROOT = resolve(import.meta.dirname, "..");

const faults = JSON.parse(readFileSync(join(ROOT, "test-results/faults.json"), "utf8"));
if (
  process.env.FAULT_SEED ||
  process.env.FAULT_SEEDS ||
  process.env.FAR_SIDE_SEED ||
  process.env.FAR_SIDE_SEEDS
) {
  console.log("a replay of chosen seeds: the README's reliability block is left as it is");
  process.exit(0);
}

const n = (value) => Number(value).toLocaleString("en-US");
const kinds = Object.entries(faults.faultsByKind)
  .sort(([, a], [, b]) => b.injected - a.injected)
  .map(([kind, f]) => `${kind} ${n(f.injected)}`)
  .join(", ");
const points = Object.entries(faults.faultPointsFired)
  .sort(([, a], [, b]) => b - a)
  .map(([point, count]) => `\`${point}\` ${n(count)}`)
  .join(", ");
const opsKinds = Object.entries(faults.opsByKind)
  .sort(([, a], [, b]) => b.total - a.total)
  .map(([kind, o]) => `${kind} ${n(o.ok)}/${n(o.total)}`)
  .join(", ");
const violations = [
  ["lost", faults.lost],
  ["duplicated", faults.duplicated],
  ["unexpected", faults.unexpected],
  ["orphaned", faults.orphaned],
  ["stuck", faults.stuck],
  ["seq gaps", faults.seqGaps],
]
  .map(([what, count]) => `${what} ${n(count)}`)
  .join(", ");
const failing = faults.failingSeeds.length;
const refusedTotal = Object.values(faults.refusedByReason).reduce((sum, k) => sum + k, 0);
const refusedWhy = Object.entries(faults.refusedByReason)
  .sort(([, a], [, b]) => b - a)
  .map(([why, k]) => `${why} ${n(k)}`)
  .join("; ");

// requests of this deployment's schedules refused or cut off, each by the cause the checker tied it
// to (test/faults/refusals.ts): an unexplained one fails its seed as `wrong`
const unanswered = faults.unansweredByCause ?? {};
const unansweredTotal = Object.values(unanswered).reduce((sum, k) => sum + k, 0);
const unansweredWhy = Object.entries(unanswered)
  .sort(([, a], [, b]) => b - a)
  .map(([why, k]) => `${why} ${n(k)}`)
  .join("; ");

// far-side schedules (test/faults/far-side.ts) are numbered from 1001
const farSide = faults.seedList.filter((seed) => seed > 1000).length;
const inProcess = faults.seeds - farSide;

const lines = [
  "| what | result |",
  "|---|---|",
  `| schedules | ${n(faults.seeds)} seeded schedules (${n(inProcess)} in this deployment, ${n(farSide)} across its out-of-process paths), ${n(faults.sessions)} sessions; ${failing === 0 ? "every one passed its checks" : `${failing} failed: ${faults.failingSeeds.map((s) => s.seed).join(", ")}`} |`,
  `| faults injected | ${n(faults.injected)}: ${kinds} |`,
  `| where they fired | ${Object.keys(faults.faultPointsFired).length} places: ${points} |`,
  `| operations | ${n(faults.ops)}: ${n(faults.ok)} acknowledged (${faults.okPercent} %), ${n(faults.fail)} refused, ${n(faults.ambiguous)} cut off without an answer; acknowledged per kind: ${opsKinds} |`,
  `| requests refused or cut off, by cause | ${n(unansweredTotal)} in this deployment's schedules, each tied to a fault injected at that request or to the refusal the contract gives in the state the history put its session in (${unansweredWhy || "none"}) |`,
  `| answers compared with the ledger | ${n(faults.answersChecked)} acknowledged messages, follow-ups, runs (local, remote, A2A, ACP; started over HTTP or by a model, in the foreground or the background), MCP calls both ways and user tool calls: ${n(faults.answeredAsExpected)} said exactly what they were scripted to say, once; ${n(refusedTotal)} ended otherwise for a cause in the history: an interrupt, dispose or drain acknowledged after the work was accepted and before it ended, or a fault that fired there with the error it injected (${refusedWhy || "none"}); wrong ${n(faults.wrong)} |`,
  `| checked after every alarm drained | ${violations} (every table of every session of the schedule, and the registry's directory) |`,
  "",
  `Written by \`npm run test:faults\` from \`test-results/faults.json\` at ${faults.commit}, ${faults.generatedAt.slice(0, 10)} (${faults.wallSeconds} s). Replay one schedule with \`FAULT_SEED=<n> npm run test:faults\` (an out-of-process one, numbered from 1001, with \`FAR_SIDE_SEED=<n>\`).`,
];

writeBlock(join(ROOT, "README.md"), "reliability", lines.join("\n"));
console.log("wrote the reliability block of README.md");
