// Builds the benchmark Worker (bench/worker/entry.ts: the product plus the floor object) with
// esbuild (wrangler's own) and runs it in workerd through Miniflare 5, configured from
// wrangler.toml plus the floor's binding, with a random admin token,
// local tracing off and fresh temporary persistence. Loopback only.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { build } from "esbuild";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { WORKER_BUNDLE } from "../../cli/build.mjs";
import { zodEnglishOnly } from "../../scripts/lib/zod-english-only.mjs";

// Local tracing slows the runtime 8-25x (toolchain.md); Miniflare 5 only enables it on request,
// and wrangler's helpers read this variable.
process.env.X_LOCAL_OBSERVABILITY = "false";
// wrangler would announce that it read .dev.vars; the admin token is replaced anyway.
process.env.WRANGLER_LOG ??= "warn";

const ROOT = resolve(import.meta.dirname, "../..");

/**
 * Bundles a Worker's main the way wrangler does for workerd (cli/build.mjs) into
 * `outdir`; resolves the main module's path. `split`: split at every dynamic import as this
 * repository's Worker is built for deployment (scripts/build-worker.mjs), the chunks beside it.
 */
export async function bundle(main, outdir, { split = false } = {}) {
  const outfile = join(outdir, "worker.mjs");
  await build({
    entryPoints: { worker: main },
    outdir,
    outExtension: { ".js": ".mjs" },
    ...(split ? { splitting: true, chunkNames: "chunks/[name]-[hash]" } : {}),
    ...WORKER_BUNDLE,
    ...(split ? { plugins: [zodEnglishOnly()] } : {}),
    sourcemap: false,
    // unminified: the profiler (bench/profile.mjs) reads the `// path` comment esbuild writes
    // above each module to tell whose code a sample ran
    logLevel: "warning",
  });
  return outfile;
}

/**
 * The script options of a bundle `bundle` wrote: its main module, and with it, if it was split,
 * every chunk beside it as a module of its own (workerd compiles each when first imported).
 */
function modulesOf(scriptPath) {
  const root = dirname(scriptPath);
  const chunks = join(root, "chunks");
  // workerd reads the script relative to its root and never above it
  if (!existsSync(chunks)) return { modules: true, scriptPath, rootPath: root };
  const files = [
    scriptPath,
    ...readdirSync(chunks)
      .filter((f) => f.endsWith(".mjs"))
      .map((f) => join(chunks, f)),
  ];
  return {
    modulesRoot: root,
    modules: files.map((path) => ({ type: "ESModule", path, contents: readFileSync(path, "utf8") })),
  };
}

/**
 * Starts the Worker (`bindings` add to or override wrangler.toml's vars; `inspectorPort` opens
 * workerd's V8 inspector there, for the profiler; `scriptPath`: a bundle of bench/worker/entry.ts
 * already built by `bundle`, so that nothing is built). Returns { url, adminToken, scriptPath,
 * buildMs, startMs, readyMs, restart(), stop() }: `readyMs` from the Miniflare instance's creation
 * until workerd answers (the Worker's global scope evaluated), `startMs` the same with the build.
 * `restart()` restarts workerd on the same persistence (every Durable Object starts cold and
 * reopens its SQLite from disk).
 */
export async function startWorker({ bindings = {}, inspectorPort, scriptPath: prebuilt } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "subagents-bench-"));
  // also on an exit that skips stop() (Miniflare exits on SIGINT by itself); a stopped Worker's
  // listener goes, so that many starts in one run (the first-request row) leave none behind
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  const cleanup = () => {
    process.off("exit", removeDir);
    removeDir();
  };
  process.once("exit", removeDir);
  try {
    const t0 = performance.now();
    const fromConfig = unstable_getMiniflareWorkerOptions(join(ROOT, "wrangler.toml"));
    // the product's Worker plus the floor object and its /bench/ routes (bench/worker/entry.ts)
    const scriptPath = prebuilt ?? (await bundle(join(ROOT, "bench/worker/entry.ts"), dir));
    const buildMs = performance.now() - t0;
    const adminToken = `bench-${randomBytes(24).toString("hex")}`;
    // Every binding and setting wrangler.toml declares (Durable Objects, vars, rate limits, ...),
    // with the bundle as the script (and its chunks, if it was split). Left out: wrangler.toml's module rules (for its build's folder), the config's
    // root, and static assets (wrangler.toml declares none: the Worker serves its dashboard).
    const { assets: _assets, modulesRules: _rules, rootPath: _root, ...fromToml } = fromConfig.workerOptions;
    const options = convertV4MiniflareOptions({
      ...fromToml,
      name: "subagents",
      ...modulesOf(scriptPath),
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
    const t1 = performance.now();
    const mf = new Miniflare(options);
    const url = (await mf.ready).origin;
    const readyMs = performance.now() - t1;
    if (!/^http:\/\/(127\.0\.0\.1|\[::1\]|localhost):\d+$/.test(url))
      throw new Error(`not a loopback address: ${url}`);
    return {
      url,
      adminToken,
      scriptPath,
      buildMs,
      readyMs,
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

/**
 * Starts a fixture Worker of bench/startup/ (`dir` holds its wrangler.toml) in workerd the way
 * startWorker starts the product's, from `scriptPath` (its main bundled by `bundle`), on fresh
 * persistence. Returns { url, readyMs, stop() }, `readyMs` as startWorker's.
 */
export async function startFixture(dir, scriptPath) {
  const state = mkdtempSync(join(tmpdir(), "subagents-fixture-"));
  const removeState = () => rmSync(state, { recursive: true, force: true });
  const cleanup = () => {
    process.off("exit", removeState);
    removeState();
  };
  process.once("exit", removeState);
  try {
    const { workerOptions } = unstable_getMiniflareWorkerOptions(join(dir, "wrangler.toml"));
    const { assets: _assets, modulesRules: _rules, rootPath: _root, ...fromToml } = workerOptions;
    const options = convertV4MiniflareOptions({
      ...fromToml,
      modules: true,
      scriptPath,
      rootPath: dirname(scriptPath),
      host: "127.0.0.1",
      port: 0,
    });
    Object.assign(options, {
      resourcePersistencePath: join(state, "state"),
      unsafeObservability: false,
      unsafeLocalExplorer: false,
      enableDevRegistry: false,
    });
    const t1 = performance.now();
    const mf = new Miniflare(options);
    const url = (await mf.ready).origin;
    const readyMs = performance.now() - t1;
    if (!/^http:\/\/(127\.0\.0\.1|\[::1\]|localhost):\d+$/.test(url))
      throw new Error(`not a loopback address: ${url}`);
    return {
      url,
      readyMs,
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
