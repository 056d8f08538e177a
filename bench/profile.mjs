#!/usr/bin/env node
// `npm run bench:profile`: where a delegation's CPU goes, measured. Starts the benchmark Worker
// (bench/lib/worker.mjs) with workerd's V8 inspector open, runs spawn-to-result delegations over
// the API (a one-shot `spawn` child answering "echo: hi", then the long poll of its run) under the
// V8 sampling profiler, and attributes every sample to the module whose code it ran (esbuild
// writes a `// <path>` comment above each module of the unminified bundle). It prints CPU per
// delegation by part of the code and the busiest functions, writes test-results/profile.json and
// the block between the profile markers of bench/README.md.
//
//   --n=<count>        delegations profiled (default 300), after 30 unprofiled warm-up ones
//   --no-readme        leave bench/README.md alone
//
// The spawn floor (POST /bench/floor/spawn: a parent object calls a brand-new child object, one
// row each side) is profiled in the same run, in blocks alternating with the runtime's, so the
// ratio of their CPU per delegation compares samples taken under the same machine load.
import { execSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { writeBlock } from "../scripts/lib/readme-block.mjs";
import { Client } from "./lib/client.mjs";
import { devtools } from "./lib/devtools.mjs";
import { startWorker } from "./lib/worker.mjs";

const ROOT = resolve(import.meta.dirname, "..");
const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, "").split("=");
    return [k, v ?? "true"];
  }),
);
const N = Math.min(5_000, Math.max(10, Number(args.n ?? 300)));
/** Floor spawns per floor block (six blocks of each kind). */
const FLOOR_N = Math.ceil(N / 6);
const WARMUP = 30;
const SAMPLING_US = 100;

/** Parts of the code, by the path of the module a sample ran in (first match wins). */
const PARTS = [
  ["zod (request and envelope validation)", /node_modules\/zod\//],
  ["other libraries", /node_modules\//],
  ["HTTP routing, auth and bodies (src/http)", /^src\/http\//],
  ["contract: schemas, ids, errors (src/contract, src/core)", /^src\/(contract|core)\//],
  ["turn driver, tools, scripted model (src/agent)", /^src\/agent\//],
  ["the Worker and RPC entry (src/worker, src/rpc, src/platform)", /^src\/(worker|rpc|platform|index)/],
  ["providers and start checks (src/providers)", /^src\/providers\//],
  ["stores: log, inbox, outbox, runs, schema (durable-objects/store)", /^durable-objects\/store\//],
  ["delegation: runs, children, child specs (durable-objects/delegation)", /^durable-objects\/delegation\//],
  ["transports (durable-objects/transports)", /^durable-objects\/transports\//],
  ["delivery and outbox sends (durable-objects/messaging)", /^durable-objects\/messaging\//],
  ["session shell, parts, drive loop, stream (durable-objects/session)", /^durable-objects\/session\//],
  ["registry object (durable-objects/registry)", /^durable-objects\/registry\//],
  ["benchmark worker", /^bench\//],
];

/** Line number (0-based) -> module path, from esbuild's `// path` comments. */
function moduleMap(bundlePath) {
  const lines = readFileSync(bundlePath, "utf8").split("\n");
  const starts = [];
  for (const [i, line] of lines.entries()) {
    const m = /^\/\/ ((?:\.\.\/)*(?:node_modules|src|durable-objects|bench)\/\S+\.(?:ts|js|mjs|cjs))$/.exec(
      line,
    );
    if (m) starts.push([i, m[1].replace(/^(\.\.\/)+/, "")]);
  }
  return (line) => {
    let lo = 0;
    let hi = starts.length - 1;
    let found = "(bundle prelude)";
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid][0] <= line) {
        found = starts[mid][1];
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  };
}

/** A DevTools session on the isolate `target` of the inspector at `port`. */
async function inspect(port, target) {
  const list = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  const entry = list.find((t) => t.id === target);
  if (!entry) throw new Error(`no inspector target ${target}: ${list.map((t) => t.id).join(", ")}`);
  return devtools(entry.webSocketDebuggerUrl);
}

async function delegate(client, parentId, floor = false) {
  if (floor) {
    await client.call("POST", `/bench/floor/spawn?key=${parentId}`, undefined, 200);
    return;
  }
  const started = await client.call(
    "POST",
    `/v1/sessions/${parentId}/subagents`,
    { provider: "spawn", prompt: "hi", mode: "one-shot" },
    201,
  );
  const { body } = await client.call(
    "GET",
    `/v1/sessions/${parentId}/runs/${started.body.runId}?wait=30000`,
    undefined,
    200,
    40_000,
  );
  if (body.state !== "settled" || body.result?.output?.[0]?.text !== "echo: hi")
    throw new Error(`the run settled with ${JSON.stringify(body).slice(0, 300)}`);
}

const port = 9300 + Math.floor(Math.random() * 600);
const worker = await startWorker({ inspectorPort: port });
let report;
try {
  const client = new Client(worker.url, worker.adminToken);
  const parents = [];
  for (let k = 0; k < 4; k++) parents.push((await client.createSession({ label: `profile-${k}` })).id);
  for (let i = 0; i < WARMUP; i++) await delegate(client, parents[i % 4]);
  const cdp = await inspect(port, "core:user:subagents");
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: SAMPLING_US });
  // the runtime's delegations and the spawn floor in alternating blocks, each block profiled on
  // its own: their CPU ratio compares samples taken under the same machine load
  const BLOCKS = 6;
  const runtimeProfiles = [];
  const floorProfiles = [];
  let wallMs = 0;
  let floorWallMs = 0;
  for (let block = 0; block < BLOCKS; block++) {
    for (const floor of block % 2 === 0 ? [false, true] : [true, false]) {
      const count = floor ? FLOOR_N : Math.ceil(N / BLOCKS);
      await cdp.send("Profiler.start");
      const t0 = performance.now();
      for (let i = 0; i < count; i++)
        await delegate(client, floor ? `profile-floor-${i % 4}` : parents[i % 4], floor);
      const elapsed = performance.now() - t0;
      const { profile } = await cdp.send("Profiler.stop");
      if (floor) {
        floorProfiles.push(profile);
        floorWallMs += elapsed;
      } else {
        runtimeProfiles.push(profile);
        wallMs += elapsed;
      }
    }
  }
  cdp.close();
  const profiled = runtimeProfiles.length * Math.ceil(N / BLOCKS);
  const floorProfiled = floorProfiles.length * FLOOR_N;
  // the SQL statements of a delegation, counted apart (the count is not in the profiled time)
  const COUNTED = 50;
  await client.call("POST", "/bench/sql?count=on", undefined, 200);
  for (let i = 0; i < COUNTED; i++) await delegate(client, parents[i % 4]);
  await client.call("POST", "/bench/sql?count=off", undefined, 200);
  const { body: sql } = await client.call("GET", "/bench/sql", undefined, 200);
  const sqlRows = Object.entries(sql.statements)
    .map(([statement, count]) => ({ statement, perDelegation: Math.round((count / COUNTED) * 10) / 10 }))
    .sort((a, b) => b.perDelegation - a.perDelegation);
  const sqlPerDelegation = Math.round(sqlRows.reduce((n, r) => n + r.perDelegation, 0) * 10) / 10;

  const moduleOf = moduleMap(worker.scriptPath);
  /** Self time (µs) per sampled frame of one profile, idle time left out. */
  const selfTimes = function* (profile) {
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const selfUs = new Map();
    profile.samples.forEach((nodeId, i) => {
      selfUs.set(nodeId, (selfUs.get(nodeId) ?? 0) + (profile.timeDeltas[i + 1] ?? SAMPLING_US));
    });
    for (const [nodeId, us] of selfUs) {
      const frame = byId.get(nodeId).callFrame;
      if (frame.functionName !== "(idle)" && frame.functionName !== "(program)") yield { frame, us };
    }
  };
  /**
   * Self time per sample charged to the nearest frame of the bundle on its stack: the built-ins'
   * time (SQLite, RPC, JSON) lands on the function of ours that called them, so a durable step's
   * statements are counted with it.
   */
  const chargedTimes = function* (profile) {
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const parentOf = new Map();
    for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
    const selfUs = new Map();
    profile.samples.forEach((nodeId, i) => {
      selfUs.set(nodeId, (selfUs.get(nodeId) ?? 0) + (profile.timeDeltas[i + 1] ?? SAMPLING_US));
    });
    for (const [nodeId, us] of selfUs) {
      const own = byId.get(nodeId).callFrame;
      if (own.functionName === "(idle)" || own.functionName === "(program)") continue;
      let id = nodeId;
      while (id !== undefined && !byId.get(id).callFrame.url.endsWith("worker.mjs")) id = parentOf.get(id);
      yield { frame: id === undefined ? undefined : byId.get(id).callFrame, us };
    }
  };
  let floorBusyUs = 0;
  for (const profile of floorProfiles) for (const { us } of selfTimes(profile)) floorBusyUs += us;
  const parts = new Map();
  const functions = new Map();
  let busyUs = 0;
  for (const profile of runtimeProfiles) {
    for (const { frame, us } of selfTimes(profile)) {
      busyUs += us;
      const name = frame.functionName || "(anonymous)";
      const inBundle = frame.url.endsWith("worker.mjs");
      const module = inBundle ? moduleOf(frame.lineNumber) : "";
      const part = inBundle
        ? (PARTS.find(([, re]) => re.test(module))?.[0] ?? `other: ${module}`)
        : name === "(garbage collector)"
          ? "garbage collection"
          : "workerd built-ins: SQLite, RPC, JSON, crypto, streams";
      parts.set(part, (parts.get(part) ?? 0) + us);
      const fn = `${name} (${inBundle ? module : "built-in"})`;
      functions.set(fn, (functions.get(fn) ?? 0) + us);
    }
  }
  const charged = new Map();
  for (const profile of runtimeProfiles) {
    for (const { frame, us } of chargedTimes(profile)) {
      const fn = frame
        ? `${frame.functionName || "(anonymous)"} (${moduleOf(frame.lineNumber)})`
        : "(no frame of the bundle: the runtime's own event handling)";
      charged.set(fn, (charged.get(fn) ?? 0) + us);
    }
  }
  const perDelegation = (us, n = profiled) => Math.round((us / 1000 / n) * 100) / 100;
  const rows = [...parts]
    .sort((a, b) => b[1] - a[1])
    .map(([part, us]) => ({
      part,
      msPerDelegation: perDelegation(us),
      share: Math.round((us / busyUs) * 1000) / 10,
    }));
  const top = [...functions]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([fn, us]) => ({ fn, msPerDelegation: perDelegation(us) }));
  const chargedTop = [...charged]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 25)
    .map(([fn, us]) => ({ fn, msPerDelegation: perDelegation(us) }));
  let commit = "unknown";
  try {
    commit = execSync("git rev-parse --short HEAD", { cwd: ROOT, encoding: "utf8" }).trim();
  } catch {}
  report = {
    commit,
    generatedAt: new Date().toISOString(),
    delegations: profiled,
    wallMsPerDelegation: Math.round((wallMs / profiled) * 100) / 100,
    cpuMsPerDelegation: perDelegation(busyUs),
    floor: {
      spawns: floorProfiled,
      wallMsPerSpawn: Math.round((floorWallMs / floorProfiled) * 100) / 100,
      cpuMsPerSpawn: perDelegation(floorBusyUs, floorProfiled),
    },
    cpuRatioToFloor: Math.round((busyUs / profiled / (floorBusyUs / floorProfiled)) * 100) / 100,
    samplingMicroseconds: SAMPLING_US,
    parts: rows,
    topFunctions: top,
    chargedFunctions: chargedTop,
    sqlStatementsPerDelegation: sqlPerDelegation,
    sqlStatements: sqlRows,
  };
} finally {
  await worker.stop();
}

console.log(
  `\nCPU of one spawn-to-result delegation in the Worker's isolate (${report.delegations} profiled)`,
);
console.log(`wall ${report.wallMsPerDelegation} ms, CPU ${report.cpuMsPerDelegation} ms per delegation`);
console.log(
  `spawn floor in the same run: wall ${report.floor.wallMsPerSpawn} ms, CPU ${report.floor.cpuMsPerSpawn} ms per spawn; CPU ratio ${report.cpuRatioToFloor}x\n`,
);
for (const r of report.parts)
  console.log(`${String(r.msPerDelegation).padStart(7)} ms  ${String(r.share).padStart(5)} %  ${r.part}`);
console.log(`\nSQL statements per delegation: ${report.sqlStatementsPerDelegation}`);
for (const r of report.sqlStatements.slice(0, 25))
  console.log(`${String(r.perDelegation).padStart(6)}  ${r.statement}`);
console.log("\nbusiest functions (self time):");
for (const f of report.topFunctions) console.log(`${String(f.msPerDelegation).padStart(7)} ms  ${f.fn}`);

console.log(
  "\nbuilt-ins charged to the function of ours that called them (self + callees outside the bundle):",
);
for (const f of report.chargedFunctions) console.log(`${String(f.msPerDelegation).padStart(7)} ms  ${f.fn}`);

mkdirSync(join(ROOT, "test-results"), { recursive: true });
writeFileSync(join(ROOT, "test-results/profile.json"), `${JSON.stringify(report, null, 2)}\n`);
if (args["no-readme"] === undefined) {
  const lines = [
    `CPU of one spawn-to-result delegation (\`POST …/subagents\`, the child's echo turn, its result delivered to the parent, the long poll answered) in the Worker's isolate, ${report.delegations} delegations sampled every ${SAMPLING_US} µs: **${report.cpuMsPerDelegation} ms CPU** of ${report.wallMsPerDelegation} ms wall per delegation, **${report.cpuRatioToFloor}x** the CPU of the spawn floor profiled in the same run (${report.floor.cpuMsPerSpawn} ms of ${report.floor.wallMsPerSpawn} ms wall per spawn, ${report.floor.spawns} spawns). ${report.sqlStatementsPerDelegation} SQL statements per delegation (parent and child).`,
    "",
    "| part of the code | CPU ms per delegation | share |",
    "|---|---|---|",
    ...report.parts.map((r) => `| ${r.part} | ${r.msPerDelegation} | ${r.share} % |`),
    "",
    "Busiest functions (self time per delegation): " +
      report.topFunctions
        .slice(0, 10)
        .map((f) => `\`${f.fn}\` ${f.msPerDelegation} ms`)
        .join(", ") +
      ".",
    "",
    "The same time with the built-ins' share (SQLite, RPC, JSON) charged to the function of ours that called them, per delegation: " +
      report.chargedFunctions
        .slice(0, 12)
        .map((f) => `\`${f.fn}\` ${f.msPerDelegation} ms`)
        .join(", ") +
      ".",
    "",
    `Written by \`npm run bench:profile\` at ${report.commit}, ${report.generatedAt.slice(0, 10)}.`,
  ];
  writeBlock(join(ROOT, "bench/README.md"), "profile", lines.join("\n"));
  console.log("\nwrote the profile block of bench/README.md");
}
