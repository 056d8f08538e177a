// `subagents-edge build <entry> [--outdir <dir>]`: a Worker's split build (README "Start fast").
//
// wrangler bundles a Worker into one module, and workerd compiles all of a module when it loads
// it: a Worker that mounts the runtime compiles the whole runtime (its objects, the HTTP router,
// zod and the libraries it loads on first use) at every isolate start. This build splits the
// Worker at every dynamic `import()` instead (esbuild's code splitting): the main module holds
// what a start runs (the classes the Worker exports and its front door), and each part the
// runtime loads on first use is a module of its own under `chunks/`, compiled when an isolate
// first needs it. wrangler uploads the modules as they are:
//
//   main = "build/worker/index.js"
//   no_bundle = true
//   rules = [{ type = "ESModule", globs = ["chunks/*.js"], fallthrough = false }]
//   [build]
//   command = "npx subagents-edge build src/worker.ts"
//
// The settings are those wrangler bundles with for workerd (ESM, the workerd conditions, every
// package bundled, `cloudflare:*` and Node's built-ins left to the runtime). The output folder is
// emptied first, but for `index.d.ts`: the build writes one (the entry's own types, for the `Env`
// that `wrangler types` makes from `main`) when there is none. esbuild is wrangler's own
// dependency; a project without it installs it (`npm install -D esbuild`).
import { mkdirSync, readdirSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, relative, resolve } from "node:path";

/** The esbuild settings of a Worker bundled as wrangler bundles one for workerd. */
export const WORKER_BUNDLE = {
  bundle: true,
  format: "esm",
  platform: "neutral",
  target: "es2024",
  conditions: ["workerd", "worker", "browser"],
  mainFields: ["module", "main"],
  external: ["cloudflare:*", "node:*", ...builtinModules],
};

export const BUILD_USAGE = `usage: subagents-edge build <entry> [--outdir <dir>]
  Splits the Worker <entry> (e.g. src/worker.ts) into modules that load on first use, written to
  <dir> (default build/worker): index.js, the main module wrangler.toml names, and chunks/*.js.`;

/**
 * Builds the Worker `entry` into `outdir` (both relative to `root`), split at every `import()`;
 * `plugins` are esbuild's. Resolves with esbuild's metafile of the build (its outputs, their
 * imports and the inputs each holds).
 */
export async function buildWorker({ root = process.cwd(), entry, outdir = "build/worker", plugins = [] }) {
  let esbuild;
  try {
    esbuild = await import("esbuild");
  } catch {
    throw new Error("esbuild is not installed (wrangler brings it; else `npm install -D esbuild`)");
  }
  const out = resolve(root, outdir);
  if (!existsSync(resolve(root, entry))) throw new Error(`no such entry: ${entry}`);
  mkdirSync(out, { recursive: true });
  for (const name of readdirSync(out))
    if (name !== "index.d.ts") rmSync(join(out, name), { recursive: true, force: true });
  const result = await esbuild.build({
    absWorkingDir: resolve(root),
    entryPoints: { index: entry },
    outdir: out,
    ...WORKER_BUNDLE,
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    sourcemap: "linked",
    plugins,
    metafile: true,
    logLevel: "warning",
  });
  const types = join(out, "index.d.ts");
  if (!existsSync(types)) {
    const source = relative(out, resolve(root, entry))
      .replaceAll("\\", "/")
      .replace(/\.[cm]?[jt]sx?$/, "");
    const from = JSON.stringify(source.startsWith(".") ? source : `./${source}`);
    writeFileSync(
      types,
      `// The types of index.js, the split build of ${entry} (subagents-edge build): its source's.\n` +
        `export * from ${from};\nexport { default } from ${from};\n`,
    );
  }
  return result.metafile;
}

/** The command: `build <entry> [--outdir <dir>]`. */
export async function buildMain(args) {
  let entry;
  let outdir;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--outdir") outdir = args[++i];
    else if (arg.startsWith("--outdir=")) outdir = arg.slice("--outdir=".length);
    else if (arg.startsWith("-") || entry !== undefined) throw new Error(`unexpected argument "${arg}"\n${BUILD_USAGE}`);
    else entry = arg;
  }
  if (entry === undefined || outdir === "") throw new Error(`an entry is needed\n${BUILD_USAGE}`);
  const { outputs } = await buildWorker({ entry, outdir });
  const modules = Object.keys(outputs).filter((path) => path.endsWith(".js")).length;
  console.error(`subagents-edge build: ${entry} -> ${outdir ?? "build/worker"}/index.js (${modules} modules)`);
}
