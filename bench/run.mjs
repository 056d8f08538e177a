#!/usr/bin/env node
// `npm run bench`: starts the Worker in workerd (Miniflare 5, bench routes on, tracing off, fresh
// temporary persistence), measures over real loopback HTTP from this Node process, prints a table
// and writes the figures into bench/README.md. Options (after `npm run bench --`):
//   --n=<count>        sequential requests per latency measurement (default 500)
//   --events=<count>   size of the large session (default 100000)
//   --no-readme        print only, do not touch bench/README.md
import { availableParallelism, cpus, loadavg, release } from "node:os";
import { join } from "node:path";
import { Client } from "./lib/client.mjs";
import { table, terminalTable, writeReadme } from "./lib/report.mjs";
import * as bench from "./lib/scenarios.mjs";
import { ms } from "./lib/stats.mjs";
import { startWorker } from "./lib/worker.mjs";

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
// at most 2,000: spread over 5 sessions, each session token stays under the 600-a-minute limit
const N = int("n", 500, 2_000);
const EVENTS = int("events", 100_000, 1_000_000);
const extra = process.argv.slice(2);
const command = extra.length > 0 ? `npm run bench -- ${extra.join(" ")}` : "npm run bench";

const log = (line) => console.log(`[${(performance.now() / 1000).toFixed(1)}s] ${line}`);

const loadAtStart = loadavg()[0];
const worker = await startWorker();
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await worker.stop();
};
/** Stops workerd (at most 10 s) and exits with `code`. */
const bail = (code) => {
  setTimeout(() => process.exit(code), 10_000).unref();
  void stop().finally(() => process.exit(code));
};
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => bail(130));
const RUN_BUDGET_MS = 240_000;
const hardStop = setTimeout(() => {
  console.error(`bench: gave up after ${RUN_BUDGET_MS / 1000} s`);
  bail(2);
}, RUN_BUDGET_MS);
hardStop.unref();

try {
  log(`workerd up at ${worker.url} (build ${ms(worker.buildMs)} ms, start ${ms(worker.startMs)} ms)`);
  const admin = new Client(worker.url, worker.adminToken);
  log("floor A, accepted, accepted while busy, echo (interleaved rounds)");
  const lat = await bench.latencies(admin, { n: N, warmup: 50, sessions: 5, budgetMs: 90_000 });
  const floorA = lat.floor;
  log("floor: spawn");
  const spawn = await bench.floorSpawn(admin, { n: Math.min(N, 200), warmup: 10, budgetMs: 30_000 });
  log("floor: fan-out of 100");
  const fanout = await bench.floorFanout(admin, { children: 100, rounds: 5, budgetMs: 30_000 });
  log(`building a session with ${EVENTS} events through POST /v1/sessions/:id/messages`);
  const large = await bench.buildLargeSession(admin, { events: EVENTS, concurrency: 32, budgetMs: 150_000 });
  log(`  ${large.events} events from ${large.messages} messages in ${(large.totalMs / 1000).toFixed(1)} s`);
  const fresh = await admin.createSession({ label: "bench-fresh" });
  const targets = [
    { id: large.session.id, client: large.client },
    { id: fresh.id, client: admin.withToken(fresh.token) },
  ];
  log("GET /v1/sessions/:id warm, large vs fresh");
  const [warmLarge, warmFresh] = await bench.describeWarm(targets, {
    n: Math.min(N, 200),
    warmup: 20,
    budgetMs: 20_000,
  });
  log("GET /v1/sessions/:id cold (workerd restarted on the same storage), large vs fresh");
  const cold = await bench.describeCold(worker, targets, { rounds: 10 });
  const [coldLarge, coldFresh] = cold.summary;

  const floor = { p50: floorA.p50, p99: floorA.p99 };
  const k = (n) => (n >= 1000 ? `${Math.round(n / 1000)}k` : String(n));
  const rows = [
    { name: "floor A: Worker -> DO, one durable write", ...floorA },
    { name: "message accepted (202)", ...lat.accepted, floor, target: "p50 <= 1.5x" },
    { name: "accepted, admin token (no rate limiter)", ...lat.acceptedAdmin, floor },
    { name: "accepted while a turn is busy", ...lat.busy, floor },
    { name: "echo: message -> answer on stream", ...lat.echo, floor, target: "p50 <= 4x" },
    { name: "echo: the 202 of those messages", ...lat.echoAccept, floor },
    { name: "floor: spawn a new child DO", ...spawn, floor },
    { name: `floor: fan-out of ${fanout.children}, total`, ...fanout.total, floor },
    { name: `floor: fan-out of ${fanout.children}, per child`, ...fanout.perChild, floor },
    { name: "GET session, fresh, warm", ...warmFresh, floor },
    { name: `GET session, ${k(large.events)} events, warm`, ...warmLarge, floor },
    { name: "GET session, fresh, cold open", ...coldFresh, floor },
    { name: `GET session, ${k(large.events)} events, cold open`, ...coldLarge, floor },
  ];
  const verdict = (value, limit) => (value <= limit ? "met" : "MISSED");
  const acceptedRatio = lat.accepted.p50 / floorA.p50;
  const echoRatio = lat.echo.p50 / floorA.p50;
  const buildLine =
    `Building the large session: ${large.events} events from ${large.messages} messages ` +
    `(${large.perMessage.toFixed(1)} events per message, 32 sends in flight) took ` +
    `${(large.totalMs / 1000).toFixed(1)} s (sending ${(large.sentMs / 1000).toFixed(1)} s), ` +
    `${Math.round(large.events / (large.totalMs / 1000))} events/s; messages/s by quarter of the build: ` +
    `${large.quarterRates.join(", ") || "-"}.`;
  const targetsLine =
    `Targets: accepted p50 within 1.5x floor A: ${acceptedRatio.toFixed(2)}x, ${verdict(acceptedRatio, 1.5)}; ` +
    `echo message-to-answer p50 within 4x: ${echoRatio.toFixed(2)}x, ${verdict(echoRatio, 4)}.`;
  const coldLine =
    `Cold opens: ${cold.samples[0].map(ms).join(", ")} ms (large) vs ` +
    `${cold.samples[1].map(ms).join(", ")} ms (fresh), one per workerd restart.`;

  console.log(`\n${terminalTable(rows)}\n\n${buildLine}\n${coldLine}\n${targetsLine}\n`);

  if (args.get("no-readme") !== "true") {
    const cpu = cpus()[0]?.model?.trim() ?? "unknown CPU";
    const section = [
      `Run on ${new Date().toISOString().slice(0, 10)}: \`${command}\`, ${availableParallelism()} cores (${cpu}), ` +
        `Linux ${release()}, Node ${process.version}, workerd through Miniflare 5, load average ` +
        `${loadAtStart.toFixed(2)} at the start; ${N} sequential requests per latency row after a ` +
        "warm-up (fewer where n says so).",
      "",
      table(rows),
      "",
      buildLine,
      coldLine,
      targetsLine,
    ].join("\n");
    writeReadme(join(import.meta.dirname, "README.md"), section);
    log("wrote bench/README.md");
  }
} catch (error) {
  process.exitCode = 1;
  console.error(error instanceof Error ? error.stack : error);
} finally {
  await stop();
}
