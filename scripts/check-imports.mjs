#!/usr/bin/env node
// `npm run check:imports`: the dependency rules of the source tree, checked on every import and
// re-export (type-only ones too: a type import still couples two files).
//
//   * no import cycles among the files of src/, durable-objects/ and bench/worker/;
//   * src/contract/ depends on nothing but itself (and packages);
//   * src/core/ depends only on src/contract/ and itself (pure logic);
//   * durable-objects/ never imports src/http/ (the Worker's HTTP layer sits above the objects);
//   * src/ never imports `cloudflare:*` except the service-binding entrypoint src/rpc/, and never
//     imports durable-objects/ except the composition root (src/worker/create-subagents.ts, and
//     src/index.ts, this repository's Worker built on it): src/ stays runtime-agnostic;
//   * the product never imports bench/.
//
// Prints every violation and exits 1 if there is any.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
const DIRS = ["src", "durable-objects", "bench/worker"];
const COMPOSITION = ["src/worker/create-subagents.ts", "src/index.ts"];
const SPEC =
  /(?:^|[\s;}])(?:import|export)\s[^"'`;]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/gm;

function filesUnder(dir) {
  const out = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...filesUnder(path));
    else if (/\.(ts|mjs)$/.test(name) && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

function resolveImport(from, spec) {
  const base = normalize(join(dirname(from), spec));
  for (const candidate of [base, `${base}.ts`, `${base}.mjs`, join(base, "index.ts")]) {
    try {
      if (statSync(join(ROOT, candidate)).isFile()) return candidate;
    } catch {
      // not this candidate
    }
  }
  return undefined;
}

const files = DIRS.flatMap(filesUnder);
const graph = new Map();
const violations = [];
for (const file of files) {
  const text = readFileSync(join(ROOT, file), "utf8");
  const targets = new Set();
  for (const match of text.matchAll(SPEC)) {
    const spec = match[1] ?? match[2];
    if (spec.startsWith("cloudflare:")) {
      if (file.startsWith("src/") && !file.startsWith("src/rpc/"))
        violations.push(`${file}: imports ${spec} (src/ stays runtime-agnostic)`);
      continue;
    }
    if (!spec.startsWith(".")) continue; // a package
    const target = resolveImport(file, spec);
    if (!target) {
      violations.push(`${file}: cannot resolve ${spec}`);
      continue;
    }
    targets.add(target);
    const rule = layerRule(file, target);
    if (rule) violations.push(`${file}: imports ${target} (${rule})`);
  }
  graph.set(
    file,
    [...targets].filter((t) => files.includes(t)),
  );
}

function layerRule(from, to) {
  if (from.startsWith("src/contract/") && !to.startsWith("src/contract/"))
    return "src/contract/ depends on nothing";
  if (from.startsWith("src/core/") && !to.startsWith("src/core/") && !to.startsWith("src/contract/"))
    return "src/core/ depends only on src/contract/";
  if (from.startsWith("durable-objects/") && to.startsWith("src/http/"))
    return "durable-objects/ never imports src/http/";
  if (from.startsWith("src/") && to.startsWith("durable-objects/") && !COMPOSITION.includes(from))
    return "only the composition root reaches the Durable Object classes";
  if (!from.startsWith("bench/") && to.startsWith("bench/")) return "the product never imports bench/";
  return undefined;
}

// cycles: depth-first search, each cycle reported once by its smallest rotation
const seen = new Set();
const cycles = new Set();
const stack = [];
const onStack = new Set();
function visit(file) {
  if (onStack.has(file)) {
    const cycle = stack.slice(stack.indexOf(file));
    const start = cycle.indexOf([...cycle].sort()[0]);
    cycles.add([...cycle.slice(start), ...cycle.slice(0, start)].join(" -> "));
    return;
  }
  if (seen.has(file)) return;
  seen.add(file);
  stack.push(file);
  onStack.add(file);
  for (const next of graph.get(file) ?? []) visit(next);
  stack.pop();
  onStack.delete(file);
}
for (const file of files) visit(file);
for (const cycle of cycles) violations.push(`import cycle: ${cycle}`);

if (violations.length > 0) {
  console.error(violations.join("\n"));
  console.error(`\n${violations.length} import rule violation(s) in ${files.length} files`);
  process.exit(1);
}
console.log(`imports: ${files.length} files, no cycle, every layer rule holds`);
