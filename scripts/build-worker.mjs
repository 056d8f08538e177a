#!/usr/bin/env node
// The build of this repository's Worker (wrangler.toml's `[build] command`, so `wrangler dev`,
// `npm start` and `wrangler deploy` run it first): src/index.ts bundled by esbuild into
// build/worker/, split at every dynamic `import()` into modules of their own. wrangler uploads them
// as they are (`no_bundle`, its `rules` take every .js file of the folder), and workerd compiles a
// module only when it is first imported: what loads on first use (the MCP, A2A and ACP SDKs, the AI
// SDK providers, the OpenAPI document, the answers' schemas) costs nothing when an isolate starts
// (README "Benchmarks", the startup rows). The settings are those wrangler bundles with (ESM,
// workerd conditions, `cloudflare:*` and Node built-ins left to the runtime).
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { build } from "esbuild";
import { WORKER_BUNDLE } from "./lib/worker-bundle.mjs";
import { zodEnglishOnly } from "./lib/zod-english-only.mjs";

const root = resolve(import.meta.dirname, "..");
const out = join(root, "build/worker");

// everything but index.d.ts (committed: the built module's types are its source's, for
// worker-configuration.d.ts, which `wrangler types` writes from wrangler.toml's `main`)
mkdirSync(out, { recursive: true });
for (const name of readdirSync(out, { withFileTypes: true }))
  if (name.name !== "index.d.ts") rmSync(join(out, name.name), { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { index: "src/index.ts" },
  outdir: out,
  ...WORKER_BUNDLE,
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  sourcemap: "linked",
  plugins: [zodEnglishOnly()],
  logLevel: "warning",
});
