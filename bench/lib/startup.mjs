// The startup rows (bench/README.md, "Startup"): what starting a Worker's isolate costs, from its
// startup profile, and the size of each Worker's bundle.
//
// Five Workers, each from its own wrangler config: this repository's (wrangler.toml: src/index.ts
// as scripts/build-worker.mjs builds it), a newcomer's `createSubagents()` Worker of
// `subagents-edge/core` with no protocol (bench/startup/minimal, one module as wrangler bundles
// it) and the same split by `subagents-edge build` (bench/startup/minimal-split), the floor, a trivial Worker with
// one SQLite Durable Object (bench/startup/trivial), and the Agents SDK peer (bench/startup/peer,
// main bench/peer/worker.ts). Each is bundled once as `wrangler deploy` would upload it (`wrangler
// deploy --dry-run --outfile`, offline), then profiled `runs` times as `wrangler check startup`
// profiles an upload (startup-profile.mjs: a fresh workerd imports the main module under V8's
// sampling profiler), but sampled every SAMPLING_US, the Workers taking turns run by run so that
// each sees the same background load. A profile's active time is what wrangler prints as
// "Active": the sampled time less the `(idle)` samples, garbage collection included. Each row is
// the median of its runs; a ratio over a floor of 0 has no value (the rows then give none, and
// their targets are missed).
//
// The bundle sizes come from esbuild with one set of settings for all five (ESM, workerd
// conditions, packages bundled, `cloudflare:*` and Node built-ins left as imports), unminified and
// minified, each also gzipped with node:zlib (default level).
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { WORKER_BUNDLE } from "../../cli/build.mjs";
import { profileStartup, uploadBytes } from "./startup-profile.mjs";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "../..");
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");

/** The Workers profiled, in the order the rows give them: `dir` holds the wrangler config, `entry` its main. */
export const STARTUP_WORKERS = [
  { key: "runtime", label: "this repository's Worker (src/index.ts)", dir: ROOT, entry: "src/index.ts" },
  {
    key: "minimal",
    label: "`createSubagents()`, no protocol face (bench/startup/minimal)",
    dir: join(ROOT, "bench/startup/minimal"),
    entry: "bench/startup/minimal/src/worker.ts",
  },
  {
    key: "minimalSplit",
    label: "the same, split by `subagents-edge build` (bench/startup/minimal-split)",
    dir: join(ROOT, "bench/startup/minimal-split"),
    entry: "bench/startup/minimal/src/worker.ts",
  },
  {
    key: "trivial",
    label: "trivial Worker, one SQLite Durable Object (bench/startup/trivial)",
    dir: join(ROOT, "bench/startup/trivial"),
    entry: "bench/startup/trivial/src/worker.ts",
  },
  {
    key: "peer",
    label: "Agents SDK peer (bench/peer)",
    dir: join(ROOT, "bench/startup/peer"),
    entry: "bench/peer/worker.ts",
  },
];

/** Active and garbage collection time of a V8 CPU profile, in ms, counted as wrangler counts them. */
export function activeTime(profile) {
  const names = new Map(profile.nodes.map((node) => [node.id, node.callFrame.functionName]));
  let sampled = 0;
  let idle = 0;
  let gc = 0;
  for (const [index, delta] of (profile.timeDeltas ?? []).entries()) {
    sampled += delta;
    const name = names.get(profile.samples?.[index]);
    if (name === "(idle)") idle += delta;
    else if (name === "(garbage collector)") gc += delta;
  }
  return { activeMs: (sampled - idle) / 1000, gcMs: gc / 1000, samples: profile.samples?.length ?? 0 };
}

/** `promise`, or a rejection naming `what` after `ms`. */
function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, no) => {
    timer = setTimeout(() => no(new Error(`${what} took over ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Runs wrangler (this process's Node, so Node 22 under `npm run`) in `cwd`; resolves with its output. */
async function wrangler(cwd, args, timeoutMs) {
  const { stdout, stderr } = await run(process.execPath, [WRANGLER, ...args], {
    cwd,
    timeout: timeoutMs,
    maxBuffer: 16 * 1024 * 1024,
    // at log level, so the dry run prints its upload size (the bench quiets wrangler elsewhere)
    env: {
      ...process.env,
      WRANGLER_LOG: "log",
      WRANGLER_SEND_METRICS: "false",
      FORCE_COLOR: "0",
      X_LOCAL_OBSERVABILITY: "false",
    },
  });
  return `${stdout}${stderr}`;
}

/**
 * The protocols' SDKs whose code a bundle may hold (npm package name prefixes): MCP, A2A, ACP and
 * the AI SDK (the `openai:` and `workers-ai:` routes' providers and what they bring).
 */
export const PROTOCOL_SDKS = [
  "@modelcontextprotocol/",
  "@a2a-js/",
  "@agentclientprotocol/",
  "@ai-sdk/",
  "workers-ai-provider",
  "ai",
];

/** Whether npm package `name` is one of PROTOCOL_SDKS (a scope prefix ends with "/", a name is whole). */
export function isProtocolSdk(name) {
  return PROTOCOL_SDKS.some((entry) => (entry.endsWith("/") ? name.startsWith(entry) : name === entry));
}

/** A bundled module's npm package (`@scope/name` or `name`), or undefined for the project's own code. */
function packageOf(path) {
  const at = path.lastIndexOf("node_modules/");
  if (at < 0) return undefined;
  const [first, second] = path.slice(at + "node_modules/".length).split("/");
  return first.startsWith("@") ? `${first}/${second}` : first;
}

/**
 * Raw, gzip, minified and minified gzip bytes of `entry` bundled by esbuild, and `protocolSdks`:
 * the bytes of the unminified bundle that each protocol SDK package contributes (none: {}).
 */
export async function bundleSizes(entry) {
  const sizes = { protocolSdks: {} };
  for (const minify of [false, true]) {
    const result = await build({
      absWorkingDir: ROOT,
      entryPoints: [entry],
      write: false,
      outfile: "worker.mjs",
      ...WORKER_BUNDLE,
      minify,
      metafile: !minify,
      logLevel: "silent",
    });
    const bytes = result.outputFiles[0].contents;
    for (const output of Object.values(result.metafile?.outputs ?? {}))
      for (const [path, { bytesInOutput }] of Object.entries(output.inputs)) {
        const name = packageOf(path);
        if (name !== undefined && isProtocolSdk(name))
          sizes.protocolSdks[name] = (sizes.protocolSdks[name] ?? 0) + bytesInOutput;
      }
    sizes[minify ? "minifiedBytes" : "rawBytes"] = bytes.byteLength;
    sizes[minify ? "minifiedGzipBytes" : "gzipBytes"] = gzipSync(bytes).byteLength;
  }
  return sizes;
}

/**
 * Measures every Worker of STARTUP_WORKERS: `runs` startup profiles each (taking turns) and its
 * bundle sizes. Bounded: each wrangler call by `callTimeoutMs`, the profiling rounds by `budgetMs`
 * (fewer runs then, at least one each). Resolves { runs, workers: { key: { label, activeMs,
 * gcMs, samples: [{ activeMs, gcMs }], uploadKib, uploadGzipKib, ...sizes } } }.
 */
export async function measureStartup({
  runs = 5,
  budgetMs = 180_000,
  callTimeoutMs = 60_000,
  log = () => {},
}) {
  const dir = mkdtempSync(join(tmpdir(), "subagents-startup-"));
  try {
    const deadline = performance.now() + budgetMs;
    const workers = {};
    for (const w of STARTUP_WORKERS) {
      const bundle = join(dir, `${w.key}.bundle`);
      const output = await wrangler(
        w.dir,
        ["deploy", "--dry-run", "--outfile", bundle, "--outdir", join(dir, `${w.key}-out`)],
        callTimeoutMs,
      );
      const upload = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(output);
      workers[w.key] = {
        label: w.label,
        bundle,
        uploadKib: upload ? Number(upload[1]) : undefined,
        uploadGzipKib: upload ? Number(upload[2]) : undefined,
        upload: await uploadBytes(bundle),
        ...(await bundleSizes(w.entry)),
        samples: [],
      };
    }
    log(
      `  bundled ${STARTUP_WORKERS.length} Workers; profiling their startup (${runs} runs each, taking turns)`,
    );
    for (let i = 0; i < runs && (i === 0 || performance.now() < deadline); i++) {
      for (const w of STARTUP_WORKERS) {
        const profile = await withTimeout(
          profileStartup(workers[w.key].bundle),
          callTimeoutMs,
          "a startup profile",
        );
        const { activeMs, gcMs, samples } = activeTime(profile);
        workers[w.key].samples.push({ activeMs, gcMs, profileSamples: samples });
      }
    }
    for (const w of Object.values(workers)) {
      delete w.bundle;
      w.activeMs = median(w.samples.map((s) => s.activeMs));
      w.gcMs = median(w.samples.map((s) => s.gcMs));
      w.meanActiveMs = w.samples.reduce((sum, s) => sum + s.activeMs, 0) / w.samples.length;
    }
    return { runs: workers.runtime.samples.length, workers };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
