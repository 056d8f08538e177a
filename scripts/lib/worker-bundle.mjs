// The esbuild settings a Worker is bundled with, as wrangler bundles one for workerd: ESM, the
// workerd conditions, every package bundled, `cloudflare:*` and Node built-ins left to the
// runtime. The Worker's build (scripts/build-worker.mjs) and the benchmark's bundles
// (bench/lib/startup.mjs, bench/lib/worker.mjs) start from these.
import { builtinModules } from "node:module";

export const WORKER_BUNDLE = {
  bundle: true,
  format: "esm",
  platform: "neutral",
  target: "es2024",
  conditions: ["workerd", "worker", "browser"],
  mainFields: ["module", "main"],
  external: ["cloudflare:*", "node:*", ...builtinModules],
};
