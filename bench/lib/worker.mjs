// Builds the benchmark Worker (bench/worker/entry.ts: the product plus the floor object) with
// esbuild (wrangler's own) and runs it in workerd through Miniflare 5, configured from
// wrangler.toml plus the floor's binding, with a random admin token,
// local tracing off and fresh temporary persistence. Loopback only.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { build } from "esbuild";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

// Local tracing slows the runtime 8-25x (toolchain.md); Miniflare 5 only enables it on request,
// and wrangler's helpers read this variable.
process.env.X_LOCAL_OBSERVABILITY = "false";
// wrangler would announce that it read .dev.vars; the admin token is replaced anyway.
process.env.WRANGLER_LOG ??= "warn";

const ROOT = resolve(import.meta.dirname, "../..");

/** Bundles src/index.ts the way wrangler does for workerd (ESM, workerd conditions). */
async function bundle(main, outdir) {
  const outfile = join(outdir, "worker.mjs");
  await build({
    entryPoints: [main],
    outfile,
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2024",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["module", "main"],
    external: ["cloudflare:*", "node:*"],
    sourcemap: false,
    // unminified: the profiler (bench/profile.mjs) reads the `// path` comment esbuild writes
    // above each module to tell whose code a sample ran
    logLevel: "warning",
  });
  return outfile;
}

/**
 * Starts the Worker (`bindings` add to or override wrangler.toml's vars; `inspectorPort` opens
 * workerd's V8 inspector there, for the profiler). Returns { url, adminToken, scriptPath, restart(), stop() }. `restart()` restarts workerd
 * on the same persistence (every Durable Object starts cold and reopens its SQLite from disk).
 */
export async function startWorker({ bindings = {}, inspectorPort } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "subagents-bench-"));
  // also on an exit that skips stop() (Miniflare exits on SIGINT by itself)
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  process.once("exit", cleanup);
  try {
    const t0 = performance.now();
    const fromConfig = unstable_getMiniflareWorkerOptions(join(ROOT, "wrangler.toml"));
    // the product's Worker plus the floor object and its /bench/ routes (bench/worker/entry.ts)
    const scriptPath = await bundle(join(ROOT, "bench/worker/entry.ts"), dir);
    const buildMs = performance.now() - t0;
    const adminToken = `bench-${randomBytes(24).toString("hex")}`;
    // Every binding and setting wrangler.toml declares (Durable Objects, vars, rate limits, ...),
    // with the bundle as the script. Left out: module rules (one bundled file), the config's
    // root, and static assets (wrangler.toml declares none: the Worker serves its dashboard).
    const { assets: _assets, modulesRules: _rules, rootPath: _root, ...fromToml } = fromConfig.workerOptions;
    const options = convertV4MiniflareOptions({
      ...fromToml,
      name: "subagents",
      modules: true,
      scriptPath,
      rootPath: dir,
      bindings: { ...fromToml.bindings, ...bindings, ADMIN_TOKEN: adminToken },
      durableObjects: { ...fromToml.durableObjects, FLOOR: { className: "FloorObject", useSQLite: true } },
      host: "127.0.0.1",
      port: 0,
    });
    Object.assign(options, {
      resourcePersistencePath: join(dir, "state"),
      unsafeObservability: false,
      unsafeLocalExplorer: false,
      enableDevRegistry: false,
      ...(inspectorPort === undefined ? {} : { inspectorPort }),
    });
    const mf = new Miniflare(options);
    const url = (await mf.ready).origin;
    if (!/^http:\/\/(127\.0\.0\.1|\[::1\]|localhost):\d+$/.test(url))
      throw new Error(`not a loopback address: ${url}`);
    return {
      url,
      adminToken,
      scriptPath,
      buildMs,
      startMs: performance.now() - t0,
      /** Restarts workerd on the same options and persistence; resolves with the (new) origin. */
      async restart() {
        await mf.setOptions(options);
        return (await mf.ready).origin;
      },
      async stop() {
        try {
          await mf.dispose();
        } finally {
          cleanup();
        }
      },
    };
  } catch (error) {
    cleanup();
    throw error;
  }
}
