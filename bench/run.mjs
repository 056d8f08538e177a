#!/usr/bin/env node
// `npm run bench`: starts the Worker in workerd (Miniflare 5, bench routes on, tracing off, fresh
// temporary persistence), measures over real loopback HTTP from this Node process, prints a table
// and writes the figures into bench/README.md (the load test's also into test-results/load.json).
// Options (after `npm run bench --`):
//   --n=<count>             sequential requests per latency measurement (default 500)
//   --events=<count>        size of the large session (default 100000)
//   --load-seconds=<s>      how long the load test holds its rate (default 60)
//   --quick                 a quick look: n=100, events=10000, fewer delegation rounds, a 10 s load
//                           hold; implies --no-readme unless --readme is given
//   --no-readme             print only, do not touch bench/README.md
//   --only=step-at-10k-events  measure that row alone and print it (writes nothing)
//   --only=startup          measure the startup and bundle rows alone and print them (writes nothing)
//   --only=budgets          measure how far children started at once spend past their tree's budget
//                           (bench/lib/budget-caps.mjs) and write README.md's budget-caps block
//   --only=reads            measure a second tenant's reads beside four trace reads of a 60 MB log
//                           (bench/lib/bounded-reads.mjs); write README.md's bounded-reads block and
//                           the figures into test-results/bench.json (`boundedReads`)
//   --startup-runs=<count>  startup profiles per Worker (default 11; the rows are their medians)
//   --budget-scale=<x>      multiply every phase's time bound by x (default: the load average per
//                           core at the start, at least 1 and at most 4: a busy machine gets longer)
//   --budget-seconds=<s>    give up on the whole run after this long (default: the sum of the
//                           phases' bounds, scaled, plus the load hold)
//   --render                measure nothing: write the generated blocks of bench/README.md and
//                           README.md again from the last run's test-results/bench.json (after a
//                           change of bench/targets.json, say); the figures stay that run's
// Every phase (startup, first request, latency, delegation, ...) is bounded in time by its own
// budget times the budget scale, and runs in its own try: a phase that fails or runs out is
// reported as such in the results, and the phases after it still run and count.
// test-results/bench.json is written at the end of every run that measures (also with --quick
// and --no-readme, and when the run gives up: then with what was measured so far).
// The trace export rows (bench/lib/trace-export.mjs) run the echo and spawn-to-result rounds on a
// second Worker with OTEL_EXPORTER_OTLP_ENDPOINT set to a collector in this process, beside the
// first (export off); if that Worker does not start, the phase is reported as not measured and
// the rest of the run stands.
// The targets (the ratio each headline row must stay within) are defined once, in
// bench/targets.json; bench/lib/render.mjs writes both READMEs' blocks from a run's figures and them.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, release } from "node:os";
import { join } from "node:path";
import { Client } from "./lib/client.mjs";
import { pressure } from "./lib/cpu.mjs";
import * as delegation from "./lib/delegation.mjs";
import { loadTest, STABLE } from "./lib/load.mjs";
import { startStreamingModel, streamingRounds } from "./lib/streaming.mjs";
import { stepAtLongLog } from "./lib/long-session.mjs";
import { alignTable, grid, terminalTable } from "./lib/report.mjs";
import { firstRequestRounds } from "./lib/first-request.mjs";
import {
  loadTargets,
  meets,
  phasesLine,
  RESULTS_FILE,
  readResults,
  startupLines,
  startupTable,
  targetsLine,
  withTargets,
  writeReadmes,
} from "./lib/render.mjs";
import * as bench from "./lib/scenarios.mjs";
import { measureStartup, STARTUP_WORKERS } from "./lib/startup.mjs";
import { ms, ratio } from "./lib/stats.mjs";
import { exportRounds, startOtlpSink } from "./lib/trace-export.mjs";
import { startWorker } from "./lib/worker.mjs";
import {
  BUDGET_CASES,
  BUDGET_PRICES,
  budgetBlock,
  measureCase,
  startUsageModel,
  writeBudgetBlock,
} from "./lib/budget-caps.mjs";
import { ensurePeerInstalled, startPeer } from "./lib/peer.mjs";
import {
  boundedReadsBlock,
  measureBoundedReads,
  secondTenant,
  writeBoundedReads,
} from "./lib/bounded-reads.mjs";

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [key, value] = a.replace(/^--/, "").split("=");
    return [key, value ?? "true"];
  }),
);
const int = (name, fallback, max) => {
  const value = Number(args.get(name) ?? fallback);
  if (!Number.isInteger(value) || value < 1 || value > max)
    throw new Error(`--${name} must be an integer in 1..${max}`);
  return value;
};
const QUICK = args.get("quick") === "true";
// at most 2,000: spread over 5 sessions, each session token stays under the 600-a-minute limit
const N = int("n", QUICK ? 100 : 500, 2_000);
const EVENTS = int("events", QUICK ? 10_000 : 100_000, 1_000_000);
const LOAD_SECONDS = int("load-seconds", QUICK ? 10 : 60, 600);
/** The row `--only` measures alone (no other row has a reason to run by itself). */
const ONLY = args.get("only");
if (
  ONLY !== undefined &&
  ONLY !== "step-at-10k-events" &&
  ONLY !== "startup" &&
  ONLY !== "budgets" &&
  ONLY !== "reads"
)
  throw new Error(
    "--only takes one part: --only=step-at-10k-events, --only=startup, --only=budgets or --only=reads",
  );
const STARTUP_RUNS = int("startup-runs", 11, 51);
/** Every phase's time bound is multiplied by this (a busy machine runs every step slower). */
const BUDGET_SCALE = (() => {
  const given = args.get("budget-scale");
  if (given === undefined)
    return Math.min(4, Math.max(1, Math.round((loadavg()[0] / availableParallelism()) * 10) / 10));
  const value = Number(given);
  if (!(value >= 0.1 && value <= 20)) throw new Error("--budget-scale must be a number in 0.1..20");
  return value;
})();
/** A phase's bound in ms, scaled. */
const budget = (ms) => Math.round(ms * BUDGET_SCALE);
const WRITE_README =
  ONLY === undefined && args.get("no-readme") !== "true" && (!QUICK || args.get("readme") === "true");
const TARGETS = loadTargets();

if (args.get("render") === "true") {
  // the last run's figures under the current targets and wording; nothing is measured
  const results = readResults();
  results.rows = results.rows.map(({ target: _old, ...row }) =>
    TARGETS[row.name] === undefined ? row : { ...row, target: TARGETS[row.name].atMost },
  );
  writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  writeReadmes(results, TARGETS);
  console.log(
    `wrote bench/README.md and README.md from ${RESULTS_FILE} (${results.commit}, ${results.date})`,
  );
  process.exit(0);
}
/** The delegation and load settings (smaller in --quick). */
const PLAN = {
  spawns: QUICK ? 50 : 200,
  toolRounds: QUICK ? 30 : 100,
  fanoutRounds: QUICK ? 2 : 5,
  streamRounds: QUICK ? 20 : 100,
  // the trace export rows: rounds of one echo and one spawn, each off and on, and their bound
  exportRounds: QUICK ? 100 : 500,
  exportBudgetMs: QUICK ? 20_000 : 45_000,
  // fresh workerd starts of this runtime and of the trivial Worker for the `first-request` row
  firstRequests: QUICK ? 3 : 5,
  loadSessions: 40,
  loadSteps: [100, 200, 300, 400, 600, 800],
  stepSeconds: QUICK ? 2 : 3,
  // the `step-at-10k-events` row: 5,000 echo turns make 10,000 conversation events (whatever the
  // options: the row is defined by that length), and its rounds of echo turns
  stepTurns: 5_000,
  stepRounds: Math.min(N, 100),
};
const extra = process.argv.slice(2);
const command = extra.length > 0 ? `npm run bench -- ${extra.join(" ")}` : "npm run bench";
const ROOT = join(import.meta.dirname, "..");

/** Which runtime was measured: the commit, and whether src/ or durable-objects/ had uncommitted edits. */
function revision() {
  try {
    const git = (...a) => execFileSync("git", a, { cwd: ROOT, encoding: "utf8" }).trim();
    const dirty = git("status", "--porcelain", "--", "src", "durable-objects", "wrangler.toml") !== "";
    return `runtime at ${git("rev-parse", "--short", "HEAD")}${dirty ? " with uncommitted changes" : ""}`;
  } catch {
    return "runtime revision unknown";
  }
}

/**
 * The headline rows of a run (the README's benchmark block and test-results/bench.json's `rows`):
 * each p50 with its ratio to the floor of the same run (for the peer rows, to the Agents SDK's on
 * the same work) and its target from bench/targets.json.
 */
function summaryRows(f) {
  const row = (name, stat, floorName, floorStat) => ({
    name,
    n: stat.n,
    p50: Math.round(stat.p50 * 100) / 100,
    p99: Math.round(stat.p99 * 100) / 100,
    floor: floorName,
    ratio: Math.round((stat.p50 / floorStat.p50) * 100) / 100,
    ...(TARGETS[name] === undefined ? {} : { target: TARGETS[name].atMost }),
  });
  const peer = (name, stat, floorName, peerStat) => ({
    ...row(name, stat, floorName, peerStat),
    peerP50: peerStat.p50,
  });
  // a startup row: the median active CPU of its profiles (no p99: a handful of runs)
  const startup = (name, w, floorName, floorW) => {
    const {
      p99: _none,
      ratio,
      ...r
    } = row(name, { n: w.samples.length, p50: w.activeMs, p99: Number.NaN }, floorName, {
      p50: floorW.activeMs,
    });
    // a floor of 0 ms (below the profile's resolution) gives no ratio: null, never Infinity
    return {
      ...r,
      ratio: Number.isFinite(ratio) ? ratio : null,
      floorP50: Math.round(floorW.activeMs * 100) / 100,
    };
  };
  // a phase that failed or was not run leaves its rows out (the blocks say "not measured")
  const rows = [];
  const add = (ok, make) => {
    if (ok) rows.push(...make());
  };
  add(f.lat && f.floorA, () => [
    row("accepted", f.lat.accepted, "floor A", f.floorA),
    row("accepted-admin", f.lat.acceptedAdmin, "floor A", f.floorA),
    row("echo", f.lat.echo, "floor A", f.floorA),
  ]);
  add(f.spawn, () => [
    row("spawn-201", f.spawn.accepted, "spawn floor", f.spawn.floor),
    row("spawn-to-result", f.spawn.spawn, "spawn floor", f.spawn.floor),
  ]);
  add(f.tool && f.spawn, () => [row("subagent-tool", f.tool.extra, "spawn floor", f.spawn.floor)]);
  add(f.fanout, () => [row("fanout-per-child", f.fanout.perChild, "fan-out floor", f.fanout.floorPerChild)]);
  add(f.step, () => [row("step-at-10k-events", f.step.long, "echo turn on a fresh session", f.step.fresh)]);
  add(f.cold, () => [
    row("session-cold-open-large", f.cold.summary[0], "cold open of a fresh session", f.cold.summary[1]),
  ]);
  // this runtime over the peer on the same work (below 1: this runtime is faster)
  add(f.spawn, () => [
    peer("peer-spawn", f.spawn.spawn, "Agents SDK spawn", f.spawn.peer),
    peer("peer-agent-tool", f.spawn.spawn, "Agents SDK runAgentTool", f.spawn.peerTool),
  ]);
  add(f.fanout, () => [
    peer("peer-fanout-per-child", f.fanout.perChild, "Agents SDK fan-out per child", f.fanout.peerPerChild),
  ]);
  // startup CPU (bench/lib/startup.mjs), over the trivial Worker's and the peer's of the same run
  add(f.startup, () => {
    const w = f.startup.workers;
    return [
      startup("startup-cpu", w.runtime, "trivial Worker", w.trivial),
      startup("startup-cpu-peer", w.runtime, "Agents SDK peer", w.peer),
      startup("startup-cpu-minimal", w.minimal, "trivial Worker", w.trivial),
      startup("startup-cpu-minimal-split", w.minimalSplit, "trivial Worker", w.trivial),
    ];
  });
  add(f.first, () => [
    {
      ...row("first-request", f.first.runtime.total, "trivial Worker's first request", f.first.floor.total),
      floorP50: Math.round(f.first.floor.total.p50 * 100) / 100,
    },
  ]);
  return rows;
}

const log = (line) => console.log(`[${(performance.now() / 1000).toFixed(1)}s] ${line}`);

const loadAtStart = loadavg()[0];
const measured = revision(); // before the build: others may commit or edit while this runs
const pressureAtStart = pressure();

/** The startup rows: each Worker's bundle and startup profiles (bench/lib/startup.mjs). */
function measureStartupRows() {
  log(
    `startup: ${STARTUP_WORKERS.length} Workers bundled as wrangler deploys them, ${STARTUP_RUNS} ` +
      "startup profiles each (taking turns)",
  );
  return measureStartup({
    runs: STARTUP_RUNS,
    budgetMs: budget(150_000),
    callTimeoutMs: budget(60_000),
    log,
  });
}

if (ONLY === "startup") {
  try {
    ensurePeerInstalled(log);
    const startup = await measureStartupRows();
    console.log(["", alignTable(startupTable(startup)), "", ...startupLines(startup), ""].join("\n"));
    for (const r of summaryRows({ startup }))
      console.log(
        `${r.name}: ${r.p50} ms over the ${r.floor}'s ${r.floorP50} ms = ${r.ratio === null ? "no ratio" : `${r.ratio.toFixed(2)}x`}` +
          (r.target === undefined
            ? ""
            : `, at most ${r.target}x: ${meets(r.ratio, { atMost: r.target }) ? "met" : "MISSED"}`),
      );
  } catch (error) {
    process.exitCode = 1;
    console.error(error instanceof Error ? error.stack : error);
  }
  process.exit();
}

/** What each phase measured, by phase name (absent: the phase failed or did not run). */
const m = {};
/** How each phase went, in the order run: { name, ok, seconds, error? }. */
const phases = [];
/**
 * Runs one phase: its result is kept in `m[name]`; a phase that throws is recorded as failed
 * (with why) and the run goes on, so the phases after it still count.
 */
async function phase(name, run) {
  const t0 = performance.now();
  try {
    m[name] = await run();
    phases.push({ name, ok: true, seconds: Math.round((performance.now() - t0) / 100) / 10 });
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    console.error(`bench: phase ${name} failed: ${error instanceof Error ? error.stack : why}`);
    phases.push({
      name,
      ok: false,
      seconds: Math.round((performance.now() - t0) / 100) / 10,
      error: why.split("\n")[0].slice(0, 300),
    });
  }
  return m[name];
}
/** Throws unless `value` is there (a phase whose Worker did not start fails with why). */
const need = (value, what) => {
  if (value === undefined) throw new Error(`${what} did not start`);
  return value;
};

let model;
let worker;
let peerWorker;
/** The Worker with trace export on, while its phase runs. */
let exportWorker;
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await worker?.stop().catch(() => {});
  await exportWorker?.stop().catch(() => {});
  await peerWorker?.stop().catch(() => {});
  await model?.close();
};
/** Stops workerd (at most 10 s) and exits with `code`. */
const bail = (code) => {
  setTimeout(() => process.exit(code), 10_000).unref();
  void stop().finally(() => process.exit(code));
};
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => bail(130));
// the safety net over the whole run: the phases' own bounds, scaled, plus the load hold, unless
// --budget-seconds says otherwise; when it fires, what was measured so far is still written
const RUN_BUDGET_MS =
  int("budget-seconds", Math.round(960 * BUDGET_SCALE) + LOAD_SECONDS + 60, 36_000) * 1_000;
const hardStop = setTimeout(() => {
  console.error(`bench: gave up after ${RUN_BUDGET_MS / 1000} s; writing what was measured`);
  if (ONLY === undefined) {
    phases.push({ name: "run", ok: false, error: `gave up after ${RUN_BUDGET_MS / 1000} s` });
    try {
      writeResults(assemble());
    } catch (error) {
      console.error(error instanceof Error ? error.stack : error);
    }
  }
  bail(2);
}, RUN_BUDGET_MS);
hardStop.unref();

/** The `step-at-10k-events` row and its comparisons (bench/lib/long-session.mjs). */
async function measureStep(admin) {
  log(
    `one echo turn on a session of ${PLAN.stepTurns} turns after a compaction, beside a fresh ` +
      `session's (${PLAN.stepRounds} interleaved rounds before the compaction and as many after)`,
  );
  return stepAtLongLog(admin, {
    turns: PLAN.stepTurns,
    concurrency: 32,
    n: PLAN.stepRounds,
    warmup: 5,
    budgetMs: budget(120_000),
    log,
  });
}

/** The row's table (ratios to the fresh session's turn in the same rounds) and its lines. */
function stepReport(step) {
  const fresh = { p50: step.fresh.p50, p99: step.fresh.p99 };
  const conversation = step.build.conversationEvents.toLocaleString("en-US");
  const rows = [
    { name: "echo turn, fresh session (same rounds)", ...step.fresh, floor: fresh },
    {
      name: `echo turn, ${conversation} conversation events, after a compaction`,
      ...step.long,
      floor: fresh,
      targetKey: "step-at-10k-events",
    },
  ];
  const b = step.build;
  const c = step.compaction;
  const per = (r) =>
    `${r.statements} statements, ${r.rowsRead} rows read, ${r.rowsWritten} written` +
    (r.uncounted > 0 ? ` (${r.uncounted} statements not counted)` : "");
  const lines = [
    `Long session: ${b.turns} plain text messages, each answered in a turn of its own: ` +
      `${b.conversationEvents} conversation events, ${b.events} events in all, built in ` +
      `${(b.builtMs / 1000).toFixed(1)} s (sent through the RPC entrypoint by \`/bench/send\`, 500 a request, ` +
      `32 in flight; the last accepted at ${(b.sentMs / 1000).toFixed(1)} s; at most ${b.maxPending} messages ` +
      `pending at once), every event then read back and ` +
      `checked in ${(b.readMs / 1000).toFixed(1)} s; compactions before the one asked for: ${b.compactions}. ` +
      `\`POST …/compact\` wrote its \`context/compacted\` in ${ms(c.ms)} ms, the log then holding ` +
      `${c.conversationEvents} conversation events (the rounds before it added theirs): through seq ` +
      `${c.throughSeq}, estimated ${c.tokensBefore} tokens before, ${c.tokensAfter} after.`,
    `Before the compaction, in rounds of their own (${step.before.long.n}): p50 ${ms(step.before.long.p50)} ms ` +
      `on the long session vs ${ms(step.before.fresh.p50)} ms fresh ` +
      `(${ratio(step.before.long.p50, step.before.fresh.p50)}), p99 ${ms(step.before.long.p99)} vs ` +
      `${ms(step.before.fresh.p99)} ms.`,
    "SQLite per echo turn after the compaction (every object of the Worker, 20 turns each, counted by " +
      `\`/bench/sql\`): long session ${per(step.rows.long)}; fresh session ${per(step.rows.fresh)}.`,
  ];
  return { rows, lines };
}

/**
 * The trace export rows: a collector in this process, a second Worker whose
 * OTEL_EXPORTER_OTLP_ENDPOINT points at it, and the interleaved rounds against `admin` (the first
 * Worker, export off). Never throws: a Worker that does not start, or rounds that fail, give
 * `{ failed }`, and the rest of the run stands. The second Worker and the collector are stopped
 * before it resolves.
 */
/** The export-on Worker's OTEL_BSP_SCHEDULE_DELAY: its batches' delay, stated with the rows. */
const EXPORT_SCHEDULE_DELAY_MS = 1_000;

async function measureExport(admin) {
  let sink;
  let phase = "starting the collector";
  try {
    sink = await startOtlpSink();
    phase = "starting the Worker with export on";
    // the first Worker's bindings plus the endpoint: the one difference between the two (with
    // batches a second apart rather than the default five, so even a quick run's rounds export)
    exportWorker = await startWorker({
      scriptPath: worker.scriptPath,
      bindings: {
        OPENAI_BASE_URL: model.baseUrl,
        OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
        OTEL_BSP_SCHEDULE_DELAY: String(EXPORT_SCHEDULE_DELAY_MS),
      },
    });
    log(
      `  export on: workerd up at ${exportWorker.url}, exporting to ${sink.url}/v1/traces ` +
        `(start ${ms(exportWorker.startMs)} ms)`,
    );
    phase = "the rounds";
    const rounds = await exportRounds(admin, new Client(exportWorker.url, exportWorker.adminToken), {
      n: PLAN.exportRounds,
      warmup: 20,
      sessions: 5,
      parents: 4,
      budgetMs: budget(PLAN.exportBudgetMs),
    });
    const duringRounds = sink.counts();
    // the spans of the last rounds are still on their way
    const received = await sink.settle({ quietMs: EXPORT_SCHEDULE_DELAY_MS + 1_000, timeoutMs: 10_000 });
    return { ...rounds, warmup: 20, sink: { ...received, spansDuringRounds: duringRounds.spans } };
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    console.error(
      `bench: trace export phase failed (${phase}): ${error instanceof Error ? error.stack : why}`,
    );
    return { failed: `${phase} failed: ${why.split("\n")[0].slice(0, 300)}` };
  } finally {
    const running = exportWorker;
    exportWorker = undefined;
    await running?.stop().catch(() => {});
    await sink?.close();
  }
}

/** The trace export rows' table (ratios to export off in the same rounds) and lines, or why there are none. */
function exportReport(x) {
  if (x.failed !== undefined)
    return { failed: x.failed, lines: [`Trace export: not measured (${x.failed}).`] };
  const echoOff = { p50: x.echo.off.p50, p99: x.echo.off.p99 };
  const spawnOff = { p50: x.spawn.off.p50, p99: x.spawn.off.p99 };
  const rows = [
    { name: "echo: message -> answer on stream, export off", ...x.echo.off, floor: echoOff },
    { name: "echo: message -> answer on stream, export on", ...x.echo.on, floor: echoOff },
    { name: "spawn -> result, export off", ...x.spawn.off, floor: spawnOff },
    { name: "spawn -> result, export on", ...x.spawn.on, floor: spawnOff },
  ];
  const s = x.sink;
  const kinds =
    Object.entries(s.byKind)
      .map(([kind, count]) => `${count} \`${kind}\``)
      .join(", ") || "none";
  const refused =
    Object.keys(x.refusals).length === 0
      ? ""
      : ` Refused starts (retried): ${Object.entries(x.refusals)
          .map(([status, count]) => `${count} x ${status}`)
          .join(", ")}.`;
  const lines = [
    `Trace export: ${x.rounds} rounds after ${x.warmup} warm-up rounds, each one echo (round-robin over ` +
      `${x.sessions} sessions, their session tokens) and one spawn to result (over ${x.parents} parents, admin ` +
      "token) on the Worker with export off and on the one with export on, back to back, the order " +
      `alternating; the exporting Worker batches its spans ${EXPORT_SCHEDULE_DELAY_MS} ms apart ` +
      `(OTEL_BSP_SCHEDULE_DELAY; the default is 5000).${refused}`,
    s.spans === 0
      ? "The collector received NO span: export did not run, so the export-on rows measure nothing of it " +
        `(${s.requests} requests, ${s.malformed} not OTLP JSON, ${s.otherRequests} to other paths).`
      : `The collector received ${s.spans} spans (${kinds}) in ${s.requests} requests ` +
        `(${Math.round(s.bytes / 1024)} KiB of OTLP JSON), ${s.spansDuringRounds} of them before the last ` +
        `round ended; ${s.malformed} requests not OTLP JSON, ${s.otherRequests} to other paths.`,
  ];
  const p50 = (stat) => Math.round(stat.p50 * 100) / 100;
  return {
    rounds: x.rounds,
    rows,
    lines,
    // the README line (bench/lib/render.mjs)
    summary: {
      echo: { off: p50(x.echo.off), on: p50(x.echo.on) },
      spawn: { off: p50(x.spawn.off), on: p50(x.spawn.on) },
      spans: s.spans,
      requests: s.requests,
    },
  };
}

if (ONLY === "budgets") {
  try {
    model = await startUsageModel();
    worker = await startWorker({
      bindings: { OPENAI_BASE_URL: model.baseUrl, MODEL_PRICES: JSON.stringify(BUDGET_PRICES) },
    });
    const admin = new Client(worker.url, worker.adminToken);
    const results = [];
    for (const spec of BUDGET_CASES) results.push(await measureCase(admin, spec));
    const block = budgetBlock(results, {
      revision: revision(),
      date: new Date().toISOString().slice(0, 10),
      command,
    });
    console.log(`\n${block}\n`);
    writeBudgetBlock(ROOT, block);
  } catch (error) {
    process.exitCode = 1;
    console.error(error instanceof Error ? error.stack : error);
  } finally {
    await stop();
  }
  process.exit();
}

if (ONLY === "reads") {
  try {
    const tenant = secondTenant();
    worker = await startWorker({ bindings: tenant.bindings });
    log(`workerd up at ${worker.url}`);
    const figures = await measureBoundedReads(
      new Client(worker.url, worker.adminToken),
      new Client(worker.url, tenant.token),
      { budgetMs: budget(900_000), log },
    );
    const date = new Date().toISOString();
    const block = boundedReadsBlock(figures, { revision: measured, date: date.slice(0, 10), command });
    console.log(`\n${block}\n`);
    writeBoundedReads(ROOT, RESULTS_FILE, block, { commit: measured, date, command, ...figures });
    log(`wrote README.md's bounded-reads block and the boundedReads entry of ${RESULTS_FILE}`);
  } catch (error) {
    process.exitCode = 1;
    console.error(error instanceof Error ? error.stack : error);
  } finally {
    await stop();
  }
  process.exit();
}

if (ONLY !== undefined) {
  try {
    model = await startStreamingModel();
    worker = await startWorker({ bindings: { OPENAI_BASE_URL: model.baseUrl } });
    log(`workerd up at ${worker.url} (build ${ms(worker.buildMs)} ms, start ${ms(worker.startMs)} ms)`);
    const { rows, lines } = stepReport(await measureStep(new Client(worker.url, worker.adminToken)));
    console.log(
      ["", terminalTable(withTargets(rows, TARGETS), { floorName: "fresh" }), "", ...lines, ""].join("\n"),
    );
  } catch (error) {
    process.exitCode = 1;
    console.error(error instanceof Error ? error.stack : error);
  } finally {
    await stop();
  }
  process.exit();
}

/** The machine line of the results: cores, CPU, versions, the load at the start and the CPU pressure. */
function machineLine() {
  const cpu = cpus()[0]?.model?.trim() ?? "unknown CPU";
  const pressureAtEnd = pressure();
  const waited =
    pressureAtStart && pressureAtEnd
      ? `; some task waited for a CPU during ${Math.round(
          (100 * (pressureAtEnd.cpuUs - pressureAtStart.cpuUs)) /
            ((pressureAtEnd.at - pressureAtStart.at) * 1000),
        )}% of the run (/proc/pressure/cpu)`
      : "";
  return (
    `${availableParallelism()} cores (${cpu}), Linux ${release()}, Node ${process.version}, ` +
    `workerd through Miniflare 5, ${measured}, load average ${loadAtStart.toFixed(2)} at the start${waited}`
  );
}

/** The first-request rows' table (ratios to the floor Worker's first request) and line. */
function firstRequestReport(f) {
  const floor = { p50: f.floor.total.p50, p99: f.floor.total.p99 };
  const rows = [
    { name: "floor: trivial Worker, start -> first answer", ...f.floor.total, floor },
    { name: "  of which: workerd start until ready", ...f.floor.ready },
    { name: "this runtime: start -> create + message answered", ...f.runtime.total, floor },
    { name: "  of which: workerd start until ready", ...f.runtime.ready },
    { name: "  of which: create, stream, message -> its answer", ...f.runtime.request },
  ];
  const line =
    `First request: ${f.runtime.total.n} fresh workerd starts of this runtime (the benchmark Worker, ` +
    "built once; fresh persistence) and as many of the trivial Worker (bench/startup/trivial), " +
    "alternating; each timed from the Miniflare instance's creation to the answer of the first work: " +
    "for this runtime `POST /v1/sessions`, its event stream opened and one message sent until its " +
    "`assistant/message`; for the floor one request that starts its SQLite Durable Object and writes a row.";
  return { rows, line };
}

/** Everything the READMEs' blocks are written from (test-results/bench.json), from what was measured. */
function assemble() {
  const lat = m.latency;
  const floorA = lat?.floor;
  const floor = floorA && { p50: floorA.p50, p99: floorA.p99 };
  const k = (n) => (n >= 1000 ? `${Math.round(n / 1000)}k` : String(n));
  const large = m.large;
  const [warmLarge, warmFresh] = m.warm ?? [];
  const [coldLarge, coldFresh] = m.cold?.summary ?? [];
  const latency = [
    ...(lat
      ? [
          { name: "floor A: Worker -> DO, one durable write", ...floorA },
          { name: "message accepted (202)", ...lat.accepted, floor, targetKey: "accepted" },
          {
            name: "accepted, admin token (no rate limiter)",
            ...lat.acceptedAdmin,
            floor,
            targetKey: "accepted-admin",
          },
          { name: "accepted while a turn is busy", ...lat.busy, floor },
          { name: "echo: message -> answer on stream", ...lat.echo, floor, targetKey: "echo" },
          { name: "echo: the 202 of those messages", ...lat.echoAccept, floor },
        ]
      : []),
    ...(warmFresh
      ? [
          { name: "GET session, fresh, warm", ...warmFresh, floor },
          { name: `GET session, ${k(large.events)} events, warm`, ...warmLarge, floor },
        ]
      : []),
    ...(coldFresh
      ? [
          { name: "GET session, fresh, cold open", ...coldFresh, floor },
          { name: `GET session, ${k(large.events)} events, cold open`, ...coldLarge, floor },
        ]
      : []),
  ];
  const stepTable = m.step && stepReport(m.step);
  const { spawn, tool, fanout, streaming, load } = m;
  const spawnFloor = spawn && { p50: spawn.floor.p50, p99: spawn.floor.p99 };
  const fanoutFloor = fanout && { p50: fanout.floorPerChild.p50, p99: fanout.floorPerChild.p99 };
  const delegationRows = [
    ...(spawn
      ? [
          {
            name: "floor: spawn a new child DO (POST /bench/floor/spawn)",
            ...spawn.floor,
            floor: spawnFloor,
          },
          {
            name: "spawn -> result: POST .../subagents to settled run",
            ...spawn.spawn,
            floor: spawnFloor,
            targetKey: "spawn-to-result",
          },
          {
            name: "  of which: POST .../subagents until its 201",
            ...spawn.accepted,
            floor: spawnFloor,
            targetKey: "spawn-201",
          },
          { name: "  of which: 201 until the long-poll has the result", ...spawn.settle, floor: spawnFloor },
          { name: "peer: Agents SDK, new agent started and called", ...spawn.peer, floor: spawnFloor },
          {
            name: "peer: Agents SDK runAgentTool, a new chat sub-agent's turn",
            ...spawn.peerTool,
            floor: spawnFloor,
          },
        ]
      : []),
    ...(tool && spawn
      ? [
          { name: "subagent tool: message -> parent's final answer", ...tool.tool, floor: spawnFloor },
          { name: "echo message -> answer (same rounds)", ...tool.echo, floor: spawnFloor },
          {
            name: "subagent tool minus echo (paired per round)",
            ...tool.extra,
            floor: spawnFloor,
            targetKey: "subagent-tool",
          },
        ]
      : []),
    ...(fanout
      ? [
          { name: `floor: fan-out of ${fanout.children}, total`, ...fanout.floor },
          {
            name: `floor: fan-out of ${fanout.children}, per child`,
            ...fanout.floorPerChild,
            floor: fanoutFloor,
          },
          { name: `fan-out of ${fanout.children}: starts to last result, total`, ...fanout.total },
          { name: `  of which: all ${fanout.children} starts (to the last 201)`, ...fanout.starts },
          {
            name: `peer: Agents SDK fan-out of ${fanout.children}, per child`,
            ...fanout.peerPerChild,
            floor: fanoutFloor,
          },
          {
            name: `fan-out of ${fanout.children}: per child`,
            ...fanout.perChild,
            floor: fanoutFloor,
            targetKey: "fanout-per-child",
          },
        ]
      : []),
  ];
  const ownFloor = streaming && { p50: streaming.own.p50, p99: streaming.own.p99 };
  const streamingRows = streaming && [
    {
      name: "the model's own first token (request in -> first chunk out)",
      ...streaming.own,
      floor: ownFloor,
    },
    {
      name: "first token through the runtime (POST message -> first delta)",
      ...streaming.through,
      floor: ownFloor,
    },
    { name: "  what the runtime adds (paired per round)", ...streaming.overhead },
    {
      name: `whole answer (${streaming.words} words, ${streaming.gapMs} ms apart) -> assistant/message`,
      ...streaming.answer,
    },
  ];
  const streamingLine =
    streaming &&
    `Streaming: ${streaming.through.n} rounds over 4 sessions on \`openai:bench-model\`, a streaming OpenAI-compatible ` +
      `server in the benchmark's own process (so both clocks are one) that sends ${streaming.words} words ` +
      `${streaming.gapMs} ms apart; subscribers on \`?deltas=true\`. The runtime adds ` +
      `${ms(streaming.overhead.p50)} ms (p50) to the model's first token: the accept, the turn start, the ` +
      "model call's setup in the object, and the delta's way back over the WebSocket.";
  const buildLine =
    large &&
    `Building the large session: ${large.events} events from ${large.messages} messages ` +
      `(${large.perMessage.toFixed(1)} events per message, 32 sends in flight) took ` +
      `${(large.totalMs / 1000).toFixed(1)} s (sending ${(large.sentMs / 1000).toFixed(1)} s), ` +
      `${Math.round(large.events / (large.totalMs / 1000))} events/s; messages/s by quarter of the build: ` +
      `${large.quarterRates.join(", ") || "-"}.`;
  const coldLine =
    m.cold &&
    `Cold opens: ${m.cold.samples[0].map(ms).join(", ")} ms (large) vs ` +
      `${m.cold.samples[1].map(ms).join(", ")} ms (fresh), one per workerd restart.`;
  const refusals = (r) =>
    Object.keys(r).length === 0
      ? "none"
      : Object.entries(r)
          .map(([status, n]) => `${n} x ${status}`)
          .join(", ");
  const delegationLines = [
    ...(spawn
      ? [
          `Spawns: ${spawn.spawn.n} over ${spawn.parents} parents (admin token), each round one floor spawn and one ` +
            `runtime spawn, order alternating; refused starts (retried): ${refusals(spawn.refusals)}.`,
        ]
      : []),
    ...(tool && spawn
      ? [
          `Subagent tool: ${tool.tool.n} rounds over ${tool.parents} parents; p50(tool) - p50(echo) = ` +
            `${ms(tool.medianDifference)} ms (${ratio(tool.medianDifference, spawn.floor.p50)} the spawn floor); ` +
            `paired per round: p50 ${ms(tool.extra.p50)} ms, p99 ${ms(tool.extra.p99)} ms.`,
        ]
      : []),
    ...(fanout
      ? [
          `Fan-out: ${fanout.total.n} rounds of ${fanout.children} children, one fresh parent each; ` +
            `total p50 ${ms(fanout.total.p50)} ms vs floor ${ms(fanout.floor.p50)} ms ` +
            `(${ratio(fanout.total.p50, fanout.floor.p50)}); refused starts (retried): ${refusals(fanout.refusals)}.`,
        ]
      : []),
  ];
  let loadTable;
  let loadLines;
  if (load) {
    const stepRow = (name, s) => [
      name,
      String(s.offeredRate),
      String(s.seconds),
      String(s.sent),
      String(s.accepted),
      s.acceptedPerSecond.toFixed(0),
      ms(s.latency.p50),
      ms(s.latency.p99),
      String(s.status429),
      String(s.status503),
      String(s.status5xx),
      String(s.noAnswer + s.otherStatus + s.notSent),
      Number.isFinite(s.drainMs) ? ms(s.drainMs) : "> 30 s",
      `${s.cpu.workerdPct}%`,
      s.cpu.workerdMsPerAccepted === null ? "-" : s.cpu.workerdMsPerAccepted.toFixed(2),
      `${s.cpu.nodePct}%`,
      s.pressure ? `${s.pressure.cpuSomePct}%` : "-",
      s.stable ? "yes" : "no",
    ];
    loadTable = grid(
      [
        "phase",
        "offered/s",
        "s",
        "sent",
        "accepted",
        "accepted/s",
        "p50 ms",
        "p99 ms",
        "429",
        "503",
        "other 5xx",
        "other",
        "idle after ms",
        "workerd cpu",
        "workerd cpu ms/msg",
        "node cpu",
        "cpu pressure",
        "sustained",
      ],
      [
        ...load.steps.map((s) => stepRow(`step ${s.offeredRate}/s, try ${s.attempt}`, s)),
        stepRow(`hold ${load.chosenRate}/s`, load.hold),
      ],
    );
    const c = load.check;
    loadLines = [
      `Load: ${load.sessions} sessions, admin token, plain text messages round-robin, open loop (sends leave on ` +
        `schedule, not after the previous answer). Rate chosen by stepping ${PLAN.loadSteps.join(" -> ")} msgs/s ` +
        `for ${PLAN.stepSeconds} s each (a miss is tried once more), stopping at the first step not sustained; ` +
        `sustained = at least ${STABLE.acceptedShare * 100}% accepted, no 429/503/5xx/unanswered send, accept ` +
        `p50 <= ${STABLE.p50Ms} ms and p99 <= ${STABLE.p99Ms} ms, every session idle within ${STABLE.drainMs} ms ` +
        "of the last send. CPU columns: % of one core over the phase (workerd: all its threads; node: this " +
        "harness, the load generator); cpu pressure: share of the phase in which some task on the machine " +
        "waited for a CPU (/proc/pressure/cpu), i.e. how contended the shared machine was. " +
        (load.noneSustained
          ? `No step was sustained: held the lowest, ${load.chosenRate}/s.`
          : `Held ${load.chosenRate} msgs/s, one step below the highest sustained (${load.highestSustained}/s).`),
      `Hold: ${load.hold.accepted} of ${load.hold.sent} accepted in ${load.hold.seconds} s = ` +
        `${load.hold.acceptedPerSecond.toFixed(1)} accepted msgs/s (by 5 s window: ` +
        `${load.hold.acceptedPerSecondBy5s.join(", ") || "-"}); accept p50 ${ms(load.hold.latency.p50)} ms, ` +
        `p99 ${ms(load.hold.latency.p99)} ms, max ${ms(load.hold.latency.max)} ms; ` +
        `429: ${load.hold.status429}, 503: ${load.hold.status503}, other 5xx: ${load.hold.status5xx}, ` +
        `no answer: ${load.hold.noAnswer}; ${load.hold.stable ? "held within the sustained limits" : "NOT within the sustained limits"}; ` +
        `accept p50/p99 ms by 5 s window: ${load.hold.latencyBy5s.map((w) => `${ms(w.p50)}/${ms(w.p99)}`).join(", ") || "-"}.`,
      `Capacity: at the held rate workerd used ${load.hold.cpu.workerdMsPerAccepted?.toFixed(2) ?? "-"} ms of CPU per ` +
        "accepted message (the accept and its echo turn; almost all on one thread), so it would saturate near " +
        `${load.hold.cpu.workerdMsPerAccepted ? Math.round(1000 / load.hold.cpu.workerdMsPerAccepted) : "-"} msgs/s ` +
        `with a core to itself; the load generator used ${load.hold.cpu.nodeMsPerSend?.toFixed(2) ?? "-"} ms per send; ` +
        `the machine's CPU pressure during the hold was ${load.hold.pressure?.cpuSomePct ?? "-"}%.`,
      `Answered exactly once: ${c.answeredOnce} of ${c.accepted} accepted messages (steps and hold), ` +
        `lost ${c.lost}, duplicated ${c.duplicated}, wrong text ${c.mismatched}; ${c.unacknowledged} sends ` +
        `without a 202 (${c.unacknowledgedAnswered} of them answered anyway); ${c.events} events read in ` +
        `${c.pages} pages (${(c.readMs / 1000).toFixed(1)} s).`,
    ];
  }
  const first = m["first-request"] && firstRequestReport(m["first-request"]);
  return {
    commit: measured,
    date: new Date().toISOString(),
    command,
    machine: machineLine(),
    budgetScale: BUDGET_SCALE,
    phases,
    ...(peerWorker
      ? { bundles: { runtimeBytes: peerWorker.productBundleBytes, peerBytes: peerWorker.bundleBytes } }
      : {}),
    rows: summaryRows({
      lat,
      floorA,
      spawn,
      tool,
      fanout,
      cold: m.cold,
      step: m.step,
      startup: m.startup,
      first: m["first-request"],
    }),
    report: {
      n: N,
      loadSeconds: LOAD_SECONDS,
      fanoutChildren: fanout?.children ?? 100,
      largeEvents: large?.events ?? EVENTS,
      latency,
      step: stepTable?.rows,
      delegation: delegationRows,
      streaming: streamingRows,
      export: m.export && exportReport(m.export),
      loadTable,
      loadCheck: load && {
        lost: load.check.lost,
        duplicated: load.check.duplicated,
        mismatched: load.check.mismatched,
      },
      startup: m.startup,
      firstRequest: first && { rows: first.rows, line: first.line },
      lines: {
        build: buildLine,
        cold: coldLine,
        step: stepTable?.lines,
        delegation: delegationLines,
        streaming: streamingLine,
        load: loadLines,
      },
    },
  };
}

/** Writes test-results/bench.json (and the load test's test-results/load.json when it ran). */
function writeResults(results) {
  mkdirSync(join(ROOT, "test-results"), { recursive: true });
  writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  const load = m.load;
  if (load) {
    const loadJson = {
      date: results.date,
      command,
      machine: results.machine,
      sessions: load.sessions,
      token: "admin (exempt from the per-token rate limit)",
      stepsTried: load.steps,
      sustainedWhen: STABLE,
      chosenRate: load.chosenRate,
      noStepSustained: load.noneSustained,
      hold: load.hold,
      check: load.check,
    };
    writeFileSync(join(ROOT, "test-results", "load.json"), `${JSON.stringify(loadJson, null, 2)}\n`);
  }
  log(`wrote ${RESULTS_FILE}${load ? " and test-results/load.json" : ""}`);
}

try {
  ensurePeerInstalled(log);
  // the startup rows first, while no workerd of this run is up
  await phase("startup", measureStartupRows);
  await phase("first-request", () => {
    log(
      `first request: ${PLAN.firstRequests} fresh workerd starts of this runtime and of the trivial Worker`,
    );
    return firstRequestRounds({ samples: PLAN.firstRequests, budgetMs: budget(90_000) });
  });
  await phase("workers", async () => {
    // the streaming model the `openai:` route reaches (its first-token rows)
    model = await startStreamingModel();
    worker = await startWorker({ bindings: { OPENAI_BASE_URL: model.baseUrl } });
    log(`workerd up at ${worker.url} (build ${ms(worker.buildMs)} ms, start ${ms(worker.startMs)} ms)`);
  });
  await phase("peer", async () => {
    peerWorker = await startPeer();
  });
  const admin = worker && new Client(worker.url, worker.adminToken);
  const peer = peerWorker && new Client(peerWorker.url, "none");
  await phase("latency", () => {
    log("floor A, accepted, accepted while busy, echo (interleaved rounds)");
    return bench.latencies(need(admin, "the Worker"), {
      n: N,
      warmup: 50,
      sessions: 5,
      budgetMs: budget(90_000),
    });
  });
  await phase("spawn", () => {
    log(
      `spawn to result (${PLAN.spawns}) beside the spawn floor and the Agents SDK peer (interleaved rounds)`,
    );
    return delegation.spawnRounds(need(admin, "the Worker"), {
      n: PLAN.spawns,
      warmup: 10,
      parents: 4,
      budgetMs: budget(40_000),
      peer: need(peer, "the peer's Worker"),
    });
  });
  await phase("tool", () => {
    log(`spawn through the model's subagent tool (${PLAN.toolRounds}) beside echo (interleaved rounds)`);
    return delegation.toolRounds(need(admin, "the Worker"), {
      n: PLAN.toolRounds,
      warmup: 5,
      parents: 4,
      budgetMs: budget(30_000),
    });
  });
  await phase("streaming", () => {
    log(
      `first streamed token (${PLAN.streamRounds} rounds): through the runtime's stream vs the model's own`,
    );
    return streamingRounds(need(admin, "the Worker"), model, {
      n: PLAN.streamRounds,
      warmup: 5,
      sessions: 4,
      budgetMs: budget(30_000),
    });
  });
  await phase("fanout", () => {
    log("fan-out of 100 children beside the fan-out floor and the Agents SDK peer (interleaved rounds)");
    return delegation.fanoutRounds(need(admin, "the Worker"), {
      children: 100,
      rounds: PLAN.fanoutRounds,
      warmup: 1,
      budgetMs: budget(45_000),
      peer: need(peer, "the peer's Worker"),
    });
  });
  await phase("export", () => {
    log(
      `trace export: echo and spawn to result (${PLAN.exportRounds} rounds) with export off and on ` +
        "(a second Worker exporting to a collector in this process; interleaved rounds)",
    );
    return measureExport(need(admin, "the Worker"));
  });
  await phase("step", () => measureStep(need(admin, "the Worker")));
  await phase("large", async () => {
    log(`building a session with ${EVENTS} events through POST /v1/sessions/:id/messages`);
    const large = await bench.buildLargeSession(need(admin, "the Worker"), {
      events: EVENTS,
      concurrency: 32,
      budgetMs: budget(120_000),
    });
    log(`  ${large.events} events from ${large.messages} messages in ${(large.totalMs / 1000).toFixed(1)} s`);
    const fresh = await admin.createSession({ label: "bench-fresh" });
    large.targets = [
      { id: large.session.id, client: large.client },
      { id: fresh.id, client: admin.withToken(fresh.token) },
    ];
    return large;
  });
  await phase("warm", () => {
    log("GET /v1/sessions/:id warm, large vs fresh");
    return bench.describeWarm(need(m.large, "the large session").targets, {
      n: Math.min(N, 200),
      warmup: 20,
      budgetMs: budget(20_000),
    });
  });
  await phase("cold", async () => {
    log("GET /v1/sessions/:id cold (workerd restarted on the same storage), large vs fresh");
    const cold = await bench.describeCold(
      need(worker, "the Worker"),
      need(m.large, "the large session").targets,
      {
        rounds: 10,
      },
    );
    return cold;
  });
  // workerd may have been restarted (a new port)
  if (m.cold) admin.url = m.cold.url;
  await phase("load", () => {
    log(
      `load: ${PLAN.loadSessions} sessions, steps ${PLAN.loadSteps.join(", ")} msgs/s ` +
        `(${PLAN.stepSeconds} s each) until one is not sustained, then hold ${LOAD_SECONDS} s`,
    );
    return loadTest(need(admin, "the Worker"), {
      sessions: PLAN.loadSessions,
      steps: PLAN.loadSteps,
      stepSeconds: PLAN.stepSeconds,
      holdSeconds: LOAD_SECONDS,
      drainTimeoutMs: budget(30_000),
      log,
    });
  });

  const results = assemble();
  const r = results.report;
  console.log(
    [
      "",
      ...(r.startup ? [alignTable(startupTable(r.startup)), "", ...startupLines(r.startup), ""] : []),
      ...(r.firstRequest
        ? [terminalTable(r.firstRequest.rows, { floorName: "floor" }), "", r.firstRequest.line, ""]
        : []),
      ...(r.latency.length > 0 ? [terminalTable(withTargets(r.latency, TARGETS)), ""] : []),
      ...(r.delegation.length > 0
        ? [terminalTable(withTargets(r.delegation, TARGETS), { floorName: "floor" }), ""]
        : []),
      ...(r.export?.rows === undefined
        ? []
        : [terminalTable(r.export.rows, { floorName: "export off" }), ""]),
      ...(r.streaming ? [terminalTable(r.streaming, { floorName: "the model's own" }), ""] : []),
      ...(r.loadTable ? [alignTable(r.loadTable), ""] : []),
      ...[r.lines.build, r.lines.cold].filter(Boolean),
      "",
      ...(r.step
        ? [terminalTable(withTargets(r.step, TARGETS), { floorName: "fresh" }), "", ...r.lines.step, ""]
        : []),
      ...r.lines.delegation,
      ...(r.export?.lines ?? []),
      ...[r.lines.streaming].filter(Boolean),
      ...(r.lines.load ?? []),
      phasesLine(results),
      targetsLine(results, TARGETS),
      "",
    ].join("\n"),
  );
  writeResults(results);
  if (WRITE_README) {
    writeReadmes(results, TARGETS);
    log("wrote the results block of bench/README.md and the benchmark block of README.md");
  }
  if (phases.some((p) => !p.ok)) process.exitCode = 1;
} catch (error) {
  process.exitCode = 1;
  console.error(error instanceof Error ? error.stack : error);
} finally {
  await stop();
}
