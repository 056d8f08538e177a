#!/usr/bin/env node
// The build of this repository's Worker (wrangler.toml's `[build] command`, so `wrangler dev`,
// `npm start` and `wrangler deploy` run it first): src/index.ts split by the package's own
// `subagents-edge build` (cli/build.mjs, README "Start fast") into build/worker/, so a start
// compiles the classes the Worker exports and its front door, and every part of the runtime
// loads when an isolate first uses it (README "Benchmarks", the startup rows). One addition:
// zod's error messages in English alone (scripts/lib/zod-english-only.mjs), which the runtime
// uses alone, so the first request that builds a schema compiles 358 KiB less.
import { resolve } from "node:path";
import { buildWorker } from "../cli/build.mjs";
import { zodEnglishOnly } from "./lib/zod-english-only.mjs";

await buildWorker({
  root: resolve(import.meta.dirname, ".."),
  entry: "src/index.ts",
  outdir: "build/worker",
  plugins: [zodEnglishOnly()],
});
