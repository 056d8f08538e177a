// The benchmark's generated blocks: the results block of bench/README.md and the benchmark block
// of the README, both from one run's figures (what `npm run bench` measured, kept in
// test-results/bench.json) and one set of targets (bench/targets.json). `npm run bench` renders
// them right after measuring; `npm run bench -- --render` renders them again from the last
// results file without measuring (after a change of a target or of the wording).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { writeBlock } from "../../scripts/lib/readme-block.mjs";
import { table } from "./report.mjs";
import { ms, ratio } from "./stats.mjs";

const ROOT = join(import.meta.dirname, "..", "..");
export const TARGETS_FILE = join(ROOT, "bench", "targets.json");
export const RESULTS_FILE = join(ROOT, "test-results", "bench.json");

/** name -> { atMost, what }: the targets, from bench/targets.json. */
export function loadTargets() {
  const { targets } = JSON.parse(readFileSync(TARGETS_FILE, "utf8"));
  for (const [name, target] of Object.entries(targets))
    if (typeof target?.atMost !== "number" || typeof target.what !== "string")
      throw new Error(`bench/targets.json: "${name}" needs a number "atMost" and a "what"`);
  return targets;
}

/** A ratio against a target: met when at most the target (the ratio as reported, to 2 decimals). */
export const meets = (ratio, target) => Number.isFinite(ratio) && ratio <= target.atMost;

/** The summary rows' names, in the README block's order, with what each row is. */
function summaryLabels(report) {
  return {
    accepted: "message accepted (202), session token",
    "accepted-admin": "message accepted (202), admin token",
    echo: "echo: message to answer on the stream",
    "spawn-201": "`POST …/subagents` until its 201",
    "spawn-to-result": "spawn to result (one-shot, full turn, durable result)",
    "subagent-tool": "`subagent` tool: message to final answer, minus the echo turn",
    "fanout-per-child": `fan-out of ${report.fanoutChildren} children, per child`,
    "step-at-10k-events": "echo turn on a session of 10,000 conversation events, after a compaction",
    "session-cold-open-large": `opening a session with ${report.largeEvents.toLocaleString("en-US")} events, cold`,
    "peer-spawn": "spawn to result, against the Agents SDK starting a new agent and calling it",
    "peer-agent-tool":
      "spawn to result, against the Agents SDK's `runAgentTool` (a new chat sub-agent's echo turn)",
    "peer-fanout-per-child": `fan-out of ${report.fanoutChildren}, per child, against the Agents SDK's`,
  };
}

const kib = (bytes) => Math.round(bytes / 1024).toLocaleString("en-US");

/**
 * The README's line on OTLP trace export: the p50 of echo and of spawn to result with export on
 * and off, measured in the same rounds, and their ratio, or why the run has none (runs written
 * before the rows existed have no line).
 */
function exportLines(exporting) {
  if (exporting === undefined) return [];
  const lead =
    "OTLP trace export (`OTEL_EXPORTER_OTLP_ENDPOINT` set, spans posted to a collector in the benchmark's process)";
  if (exporting.failed !== undefined) return [`${lead}: not measured in this run (${exporting.failed}).`, ""];
  const { echo, spawn, spans, requests } = exporting.summary;
  const pair = (what, f) => `${what} ${ms(f.on)} ms on vs ${ms(f.off)} ms off (${ratio(f.on, f.off)})`;
  const received =
    spans === 0
      ? "the collector received no span, so export did not run"
      : `the collector received ${spans.toLocaleString("en-US")} spans in ${requests.toLocaleString("en-US")} requests`;
  return [
    `${lead}, p50 of ${exporting.rounds} interleaved rounds of the same run: ${pair("echo", echo)}, ` +
      `${pair("spawn to result", spawn)}; ${received}.`,
    "",
  ];
}

/** The README's benchmark block: the headline rows, each p50, its ratio and its target. */
export function summaryBlock(results, targets) {
  const what = summaryLabels(results.report);
  const lines = [
    "| measurement | p50 | floor | vs floor | target |",
    "|---|---|---|---|---|",
    ...results.rows.map((e) => {
      const target = targets[e.name];
      const floor = `${e.floor}${e.peerP50 === undefined ? "" : ` (${e.peerP50.toFixed(1)} ms)`}`;
      const verdict =
        target === undefined ? "-" : `${target.atMost}x: ${meets(e.ratio, target) ? "met" : "missed"}`;
      return `| ${what[e.name] ?? e.name} | ${e.p50.toFixed(1)} ms | ${floor} | ${e.ratio.toFixed(2)}x | ${verdict} |`;
    }),
    "",
    `Bundles: this runtime's Worker ${kib(results.bundles.runtimeBytes)} KiB, the Agents SDK peer's ${kib(results.bundles.peerBytes)} KiB (esbuild, unminified, the same settings).`,
    "",
    ...exportLines(results.report.export),
    `Written by \`${results.command}\` (${results.commit}, ${results.date.slice(0, 10)}; ${results.machine}). ` +
      "Targets from `bench/targets.json`. Every row and more in [bench/README.md](bench/README.md) and `test-results/bench.json`.",
  ];
  return lines.join("\n");
}

/** Every target with this run's ratio and its verdict, and the load test's check. */
export function targetsLine(results, targets) {
  const ratios = new Map(results.rows.map((e) => [e.name, e.ratio]));
  const verdicts = Object.entries(targets).map(([name, target]) => {
    const ratio = ratios.get(name);
    const figure = Number.isFinite(ratio) ? `${ratio.toFixed(2)}x` : "not measured";
    return `${target.what}: ${figure}, at most ${target.atMost}x: ${meets(ratio, target) ? "met" : "MISSED"}`;
  });
  const c = results.report.loadCheck;
  const load =
    `load: lost ${c.lost}, duplicated ${c.duplicated}` +
    (c.lost + c.duplicated + c.mismatched === 0 ? ", every accepted message answered once" : ", MISSED");
  return `Targets (p50 ratios of this run; bench/targets.json): ${[...verdicts, load].join("; ")}.`;
}

/** Latency rows with their target column from the targets (`targetKey` names the target). */
export function withTargets(rows, targets) {
  return rows.map(({ targetKey, ...row }) => {
    const target = targetKey === undefined ? undefined : targets[targetKey];
    return target === undefined ? row : { ...row, target: `p50 <= ${target.atMost}x` };
  });
}

/** bench/README.md's results block. */
export function resultsBlock(results, targets) {
  const r = results.report;
  return [
    `Run on ${results.date.slice(0, 10)}: \`${results.command}\`, ${results.machine}; ${r.n} sequential ` +
      "requests per latency row after a warm-up (fewer where n says so).",
    "",
    table(withTargets(r.latency, targets)),
    "",
    r.lines.build,
    r.lines.cold,
    "",
    // runs written before the row existed have no long-session part
    ...(r.step === undefined
      ? []
      : [
          "Long session (ratios to the same echo turn on a fresh session, in the same rounds):",
          "",
          table(withTargets(r.step, targets), { floorName: "fresh session" }),
          "",
          ...r.lines.step,
          "",
        ]),
    "Delegation (ratios to the floor measured in the same rounds: the spawn floor per spawn, the fan-out floor per child):",
    "",
    table(withTargets(r.delegation, targets), { floorName: "floor" }),
    "",
    ...r.lines.delegation,
    "",
    // runs written before the rows existed have no trace export part
    ...(r.export === undefined
      ? []
      : [
          ...(r.export.rows === undefined
            ? []
            : [
                "Trace export (OTLP/HTTP to a collector in the benchmark's process; ratios to export off in the same rounds):",
                "",
                table(r.export.rows, { floorName: "export off" }),
                "",
              ]),
          ...r.export.lines,
          "",
        ]),
    "Streaming (time to the first streamed token, ratio to the model's own in the same rounds):",
    "",
    table(r.streaming, { floorName: "the model's own" }),
    "",
    r.lines.streaming,
    "",
    `Load (${r.loadSeconds} s hold; the same figures are in test-results/load.json):`,
    "",
    r.loadTable,
    "",
    ...r.lines.load,
    "",
    targetsLine(results, targets),
  ].join("\n");
}

/** bench/README.md's targets block: every target, as bench/targets.json defines it. */
export function targetsBlock(targets) {
  return [
    "| row | what | target: p50 ratio at most |",
    "|---|---|---|",
    ...Object.entries(targets).map(([name, t]) => `| \`${name}\` | ${t.what} | ${t.atMost}x |`),
    "",
    "Under load, every accepted message must be answered exactly once (none lost, none duplicated).",
  ].join("\n");
}

/**
 * Writes the generated blocks from `results` (what test-results/bench.json holds) and the
 * targets: bench/README.md's targets and results, and the README's benchmark block.
 */
export function writeReadmes(results, targets = loadTargets()) {
  const benchReadme = join(ROOT, "bench", "README.md");
  writeBlock(benchReadme, "targets", targetsBlock(targets));
  writeBlock(benchReadme, "results", resultsBlock(results, targets));
  // laid out as the formatter lays tables out, so `npm run format:check` passes on what was written
  execFileSync("npx", ["biome", "format", "--write", benchReadme], { cwd: ROOT, stdio: "ignore" });
  writeBlock(join(ROOT, "README.md"), "benchmark", summaryBlock(results, targets));
}

/** The last run's figures, as `npm run bench` wrote them. */
export function readResults() {
  const results = JSON.parse(readFileSync(RESULTS_FILE, "utf8"));
  if (results.report === undefined)
    throw new Error(
      `${RESULTS_FILE} was written before the results kept what the README blocks need: run \`npm run bench\``,
    );
  return results;
}
