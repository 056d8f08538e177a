// The benchmark's generated blocks: the results block of bench/README.md and the benchmark block
// of the README, both from one run's figures (what `npm run bench` measured, kept in
// test-results/bench.json) and one set of targets (bench/targets.json). `npm run bench` renders
// them right after measuring; `npm run bench -- --render` renders them again from the last
// results file without measuring (after a change of a target or of the wording).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { writeBlock } from "../../scripts/lib/readme-block.mjs";
import { grid, table } from "./report.mjs";
import { ms, ratio } from "./stats.mjs";
import { SAMPLING_US } from "./startup-profile.mjs";

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
    "startup-cpu": "startup CPU of this repository's Worker, against a trivial Worker's",
    "startup-cpu-peer": "startup CPU of this repository's Worker, against the Agents SDK peer's",
    "startup-cpu-minimal":
      "startup CPU of a `createSubagents()` Worker with no protocol face, against a trivial Worker's",
    "startup-cpu-minimal-split":
      "startup CPU of the same Worker split by `subagents-edge build`, against a trivial Worker's",
    "first-request":
      "fresh workerd to the answer of one create and one message, against a trivial Worker's first request",
  };
}

const KEYS = ["runtime", "minimal", "minimalSplit", "trivial", "peer"];
const median = (w) => `${w.activeMs.toFixed(1)} ms (${w.gcMs.toFixed(1)} GC)`;

/**
 * The startup and bundle table (bench/lib/startup.mjs's figures): each Worker's median startup
 * CPU with its ratio to the trivial Worker's, and its bundle unminified, minified and gzipped.
 */
export function startupTable(startup) {
  const floor = startup.workers.trivial.activeMs;
  const k = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
  return grid(
    [
      "Worker",
      "startup CPU, median",
      "vs trivial",
      "upload",
      "compiled at start",
      "bundle",
      "gzip",
      "minified",
      "minified gzip",
    ],
    KEYS.map((key) => startup.workers[key]).map((w) => [
      w.label,
      median(w),
      ratio(w.activeMs, floor),
      w.upload ? k(w.upload.totalBytes) : "-",
      w.upload ? k(w.upload.atStartBytes) : "-",
      k(w.rawBytes),
      k(w.gzipBytes),
      k(w.minifiedBytes),
      k(w.minifiedGzipBytes),
    ]),
  );
}

/** How the startup rows were taken, and every run's active time (the spread shows the noise). */
export function startupLines(startup) {
  const w = startup.workers;
  const runs = KEYS.map(
    (key) => `${key} ${w[key].samples.map((s) => s.activeMs.toFixed(1)).join(", ")}`,
  ).join("; ");
  const floor = w.trivial;
  return [
    ...(floor.activeMs > 0
      ? []
      : [
          `The trivial Worker's startup measured 0 ms in most of its profiles (mean of its runs ` +
            `${floor.meanActiveMs.toFixed(1)} ms): it fits within one profile sample (${SAMPLING_US} us), so the ratios to it have no ` +
            "value and their targets read as missed" +
            (floor.meanActiveMs > 0
              ? `; over the means of the runs instead, this repository's Worker is ` +
                `${ratio(w.runtime.meanActiveMs, floor.meanActiveMs)} the trivial Worker and the minimal one ` +
                `${ratio(w.minimal.meanActiveMs, floor.meanActiveMs)}.`
              : "."),
        ]),
    `Startup: ${startup.runs} startup profiles of each Worker (\`wrangler check startup\`'s method, sampled every ` +
      `${SAMPLING_US} us), bundled once as \`wrangler deploy --dry-run\` uploads it, the Workers taking turns; active ` +
      "CPU (sampled time less idle, garbage collection included), median of the runs; every run, ms: " +
      `${runs}. Upload: the modules of that upload (no source map); compiled at start: the main module and ` +
      "what it imports statically (a module reached only by `import()` is compiled when first imported). Bundles: esbuild, one set of " +
      "settings for all five (packages bundled), minified by esbuild, gzip by node:zlib; wrangler's own " +
      `upload of this repository's Worker: ${w.runtime.uploadKib ?? "-"} KiB (${w.runtime.uploadGzipKib ?? "-"} KiB gzip).`,
    `Protocol SDK code in each bundle (the MCP, A2A and ACP packages and the AI SDK providers, KiB of the unminified bundle): ${KEYS.map(
      (key) => {
        const sdks = Object.entries(w[key].protocolSdks ?? {});
        return `${key} ${sdks.length === 0 ? "none" : sdks.map(([name, bytes]) => `${name} ${(bytes / 1024).toFixed(0)}`).join(", ")}`;
      },
    ).join("; ")}.`,
  ];
}

/** The phases that failed in a run (nothing when every phase ran). */
export function phasesLine(results) {
  const failed = (results.phases ?? []).filter((p) => !p.ok);
  if (failed.length === 0) return "";
  return `Phases NOT measured in this run: ${failed.map((p) => `${p.name} (${p.error})`).join("; ")}.`;
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
    ...blockRows(results.rows, targets).map((e) => {
      const target = targets[e.name];
      if (e.missing)
        return `| ${what[e.name] ?? e.name} | not measured | - | - | ${target.atMost}x: not measured |`;
      const against = e.peerP50 ?? e.floorP50;
      const floor = `${e.floor}${against === undefined ? "" : ` (${against.toFixed(1)} ms)`}`;
      const verdict =
        target === undefined ? "-" : `${target.atMost}x: ${meets(e.ratio, target) ? "met" : "missed"}`;
      const vs = Number.isFinite(e.ratio) ? `${e.ratio.toFixed(2)}x` : "-";
      return `| ${what[e.name] ?? e.name} | ${e.p50.toFixed(1)} ms | ${floor} | ${vs} | ${verdict} |`;
    }),
    "",
    ...(results.report.startup
      ? [startupTable(results.report.startup), ""]
      : results.bundles
        ? [
            `Bundles: this runtime's Worker ${kib(results.bundles.runtimeBytes)} KiB, the Agents SDK peer's ${kib(results.bundles.peerBytes)} KiB (esbuild, unminified, the same settings).`,
            "",
          ]
        : []),
    ...(phasesLine(results) ? [phasesLine(results), ""] : []),
    ...exportLines(results.report.export),
    `Written by \`${results.command}\` (${results.commit}, ${results.date.slice(0, 10)}; ${results.machine}). ` +
      "Targets from `bench/targets.json`. Every row and more in [bench/README.md](bench/README.md) and `test-results/bench.json`.",
  ];
  return lines.join("\n");
}

/**
 * The rows of the README's table: the run's rows, with a `{ name, missing: true }` in its place
 * for every target the run has no figure for (a phase that failed), so that every target appears,
 * in bench/targets.json's order.
 */
function blockRows(rows, targets) {
  const names = Object.keys(targets);
  const present = new Set(rows.map((r) => r.name));
  const out = [];
  let next = 0;
  const upTo = (index) => {
    for (; next < index; next++)
      if (!present.has(names[next])) out.push({ name: names[next], missing: true });
  };
  for (const row of rows) {
    const index = names.indexOf(row.name);
    if (index >= 0) {
      upTo(index);
      next = Math.max(next, index + 1);
    }
    out.push(row);
  }
  upTo(names.length);
  return out;
}

/** Every target with this run's ratio and its verdict, and the load test's check. */
export function targetsLine(results, targets) {
  const ratios = new Map(results.rows.map((e) => [e.name, e.ratio]));
  const verdicts = Object.entries(targets).map(([name, target]) => {
    const ratio = ratios.get(name);
    // a row with no ratio (its floor measured 0 ms) is not "not measured": its floor gave none
    const figure = Number.isFinite(ratio)
      ? `${ratio.toFixed(2)}x`
      : ratios.has(name)
        ? "no ratio (its floor measured 0 ms)"
        : "not measured";
    return `${target.what}: ${figure}, at most ${target.atMost}x: ${meets(ratio, target) ? "met" : "MISSED"}`;
  });
  const c = results.report.loadCheck;
  const load =
    c === undefined
      ? "load: not measured, MISSED"
      : `load: lost ${c.lost}, duplicated ${c.duplicated}` +
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

/** bench/README.md's results block; a part whose phase failed says so instead of its figures. */
export function resultsBlock(results, targets) {
  const r = results.report;
  const failed = new Map((results.phases ?? []).filter((p) => !p.ok).map((p) => [p.name, p.error]));
  const notMeasured = (what, ...names) => {
    const why = names.filter((n) => failed.has(n)).map((n) => `${n}: ${failed.get(n)}`);
    return [`${what}: not measured in this run${why.length > 0 ? ` (${why.join("; ")})` : ""}.`, ""];
  };
  const part = (present, what, names, lines) => (present ? lines() : notMeasured(what, ...names));
  return [
    `Run on ${results.date.slice(0, 10)}: \`${results.command}\`, ${results.machine}; ${r.n} sequential ` +
      "requests per latency row after a warm-up (fewer where n says so)" +
      (results.budgetScale === undefined
        ? "."
        : `; every phase's time bound scaled by ${results.budgetScale}.`),
    "",
    // runs written before the startup rows existed have none, and say nothing of them
    ...(r.startup === undefined && results.phases === undefined
      ? []
      : part(r.startup, "Startup", ["startup"], () => [
          "Startup and bundles (CPU from `wrangler check startup`; ratios to the trivial Worker of the same run):",
          "",
          startupTable(r.startup),
          "",
          ...startupLines(r.startup),
          "",
        ])),
    ...(r.firstRequest === undefined && results.phases === undefined
      ? []
      : part(r.firstRequest, "First request", ["first-request"], () => [
          "First request after a start (ratios to the trivial Worker's, in the same rounds):",
          "",
          table(r.firstRequest.rows, { floorName: "floor" }),
          "",
          r.firstRequest.line,
          "",
        ])),
    ...part(r.latency?.length > 0, "Latency", ["workers", "latency", "large", "warm", "cold"], () => [
      table(withTargets(r.latency, targets)),
      "",
      ...[r.lines.build, r.lines.cold].filter(Boolean),
      "",
    ]),
    // runs written before the row existed have no long-session part
    ...(r.step === undefined && results.phases === undefined
      ? []
      : part(r.step, "Long session", ["step"], () => [
          "Long session (ratios to the same echo turn on a fresh session, in the same rounds):",
          "",
          table(withTargets(r.step, targets), { floorName: "fresh session" }),
          "",
          ...r.lines.step,
          "",
        ])),
    ...part(r.delegation?.length > 0, "Delegation", ["peer", "spawn", "tool", "fanout"], () => [
      "Delegation (ratios to the floor measured in the same rounds: the spawn floor per spawn, the fan-out floor per child):",
      "",
      table(withTargets(r.delegation, targets), { floorName: "floor" }),
      "",
      ...r.lines.delegation,
      "",
    ]),
    // runs written before the rows existed have no trace export part
    ...(r.export === undefined && results.phases === undefined
      ? []
      : part(r.export, "Trace export", ["export"], () => [
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
        ])),
    ...part(r.streaming, "Streaming", ["streaming"], () => [
      "Streaming (time to the first streamed token, ratio to the model's own in the same rounds):",
      "",
      table(r.streaming, { floorName: "the model's own" }),
      "",
      r.lines.streaming,
      "",
    ]),
    ...part(r.loadTable, "Load", ["load"], () => [
      `Load (${r.loadSeconds} s hold; the same figures are in test-results/load.json):`,
      "",
      r.loadTable,
      "",
      ...r.lines.load,
      "",
    ]),
    ...(phasesLine(results) ? [phasesLine(results), ""] : []),
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
