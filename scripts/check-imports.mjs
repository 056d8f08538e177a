#!/usr/bin/env node
// `npm run check:imports`: the dependency rules of the source tree, checked on every import and
// re-export (type-only ones too: a type import still couples two files), and where SQL and the
// Workers runtime may appear.
//
//   * no import cycles among the files of src/, durable-objects/ and bench/worker/;
//   * src/contract/ depends on nothing but itself (and packages);
//   * src/core/ depends only on src/contract/ and itself (pure logic);
//   * durable-objects/ never imports src/http/ (the Worker's HTTP layer sits above the objects);
//   * src/ never imports `cloudflare:*` except the service-binding entrypoint src/rpc/ and the
//     shells of the classes a Worker exports (src/worker/object-shells.ts), and never imports
//     durable-objects/ except the composition root (src/worker/create-subagents.ts, the classes
//     it exports, src/worker/exported-classes.ts, the parts they load, src/worker/lazy-parts.ts,
//     and src/index.ts, this repository's Worker built on it);
//   * the runtime-agnostic folders of src/ (RUNTIME_AGNOSTIC below) import no `cloudflare:*` and
//     name no Workers-only global type (WORKERS_TYPES below) in their code: they run on any
//     JavaScript runtime (the other folders of src/ may name Workers types);
//   * durable-objects/ outside its host adapters (HOST_ADAPTERS below) is written against the host
//     port (durable-objects/host/port.ts): it imports no `cloudflare:*`, names no Workers-only
//     global type in its code and never imports src/platform/stubs.ts (it reaches other objects
//     through the port's directory), so the same objects run on any host;
//   * the kernel names no feature: durable-objects/kernel/ (the object's machinery: dispatch, the
//     drive loop, signals, the alarm, subscribers) imports nothing of durable-objects/ but itself,
//     the host port (durable-objects/host/) and the stores (durable-objects/store/);
//   * no SQL outside the stores: no `.exec(` in durable-objects/ outside durable-objects/store/
//     (a RegExp's `.exec(` counts too there: use `String.prototype.match`);
//   * the product never imports bench/.
//
// Usage: `node scripts/check-imports.mjs [root]`: `root` is the tree to check (default: this
// repository; test/e2e/check-imports.test.mjs checks a copy). Prints every violation and exits 1
// if there is any.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, resolve } from "node:path";

const ROOT = resolve(process.argv[2] ?? join(import.meta.dirname, ".."));
const DIRS = ["src", "durable-objects", "bench/worker"];
const COMPOSITION = [
  "src/worker/create-subagents.ts",
  "src/worker/exported-classes.ts",
  "src/worker/lazy-parts.ts",
  "src/index.ts",
];
/** The files of src/ that may import `cloudflare:*` (besides src/rpc/): the exported classes' shells. */
const CLOUDFLARE_IMPORTERS = ["src/worker/object-shells.ts"];

/** The host adapters: the folder of durable-objects/ that turns a Durable Object into the host port. */
const HOST_ADAPTERS = "durable-objects/cloudflare/";
/** How the Worker addresses objects through its namespaces: in durable-objects/, for the adapters only. */
const STUBS = "src/platform/stubs.ts";

/**
 * The folders of src/ that use nothing of the Workers runtime. Not among them: src/http/,
 * src/platform/, src/rpc/ and src/worker/ (the Worker, its bindings and its Durable Object
 * classes) and src/agent/ (builtin-models.ts types the Workers AI binding as `Ai`).
 */
const RUNTIME_AGNOSTIC = [
  "src/contract/",
  "src/core/",
  "src/providers/",
  "src/client/",
  "src/a2a/",
  "src/trace/",
];

/** Global type names only the Workers runtime declares (worker-configuration.d.ts), matched as whole words in code (not after a `.`). */
const WORKERS_TYPES = [
  "Ai",
  "AlarmInvocationInfo",
  "Cloudflare",
  "D1Database",
  "DurableObject",
  "DurableObjectId",
  "DurableObjectNamespace",
  "DurableObjectState",
  "DurableObjectStorage",
  "DurableObjectStub",
  "Env",
  "ExecutionContext",
  "ExportedHandler",
  "Fetcher",
  "KVNamespace",
  "R2Bucket",
  "RateLimit",
  "Rpc",
  "SqlStorage",
  "SqlStorageCursor",
  "SqlStorageValue",
  "WebSocketPair",
  "WebSocketRequestResponsePair",
];

const RULES = {
  contract: "src/contract/ depends on nothing",
  core: "src/core/ depends only on src/contract/",
  http: "durable-objects/ never imports src/http/",
  composition: "only the composition root reaches the Durable Object classes",
  bench: "the product never imports bench/",
  cloudflare: "src/ imports cloudflare: only in src/rpc/ and src/worker/object-shells.ts",
  agnostic: "a runtime-agnostic folder uses no cloudflare: import and no Workers type",
  host: "durable-objects/ uses no cloudflare: import, no Workers type and no stubs outside durable-objects/cloudflare/",
  sql: "SQL only in durable-objects/store/",
  kernel: "durable-objects/kernel/ imports no feature (only kernel/, host/ and store/ of durable-objects/)",
};

/** What of durable-objects/ the kernel may import. */
const KERNEL_MAY_IMPORT = ["durable-objects/kernel/", "durable-objects/host/", "durable-objects/store/"];

const SPEC =
  /(?:^|[\s;}])(?:import|export)\s[^"'`;]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/gm;
const WORKERS_TYPE = new RegExp(`(?<![\\w$.])(?:${WORKERS_TYPES.join("|")})(?![\\w$])`, "g");
const SQL_CALL = /\.exec\s*\(/g;

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

const KEYWORDS_BEFORE_REGEX = new Set(["return", "typeof", "case", "in", "of", "delete", "void", "throw"]);

/**
 * `text` as code only: comments and the contents of string, template and regex literals are
 * blanked (newlines kept, so line numbers hold; a template's `${}` stays code), so a rule that
 * looks for a word is not fooled by prose or by a message that mentions it.
 */
function codeOf(text) {
  const n = text.length;
  const blank = (from, to) => text.slice(from, to).replace(/[^\n]/g, " ");
  const closes = []; // for each open `${`, the brace depth at which it closes
  let out = "";
  let depth = 0;
  let last = ""; // the last character of code that is not a space
  let word = ""; // the identifier that ends at `last`, if any
  let i = 0;
  // scans a template's text from `from` (just past its opening backtick or a `${}`'s closing brace)
  const template = (from) => {
    let j = from;
    while (j < n && text[j] !== "`" && !(text[j] === "$" && text[j + 1] === "{"))
      j += text[j] === "\\" ? 2 : 1;
    out += blank(from, j);
    if (text[j] === "$") {
      out += "${";
      closes.push(++depth);
      last = "{";
      return j + 2;
    }
    out += text[j] ?? "";
    last = "`";
    return j + 1;
  };
  while (i < n) {
    const c = text[i];
    const next = text[i + 1];
    if (c === "/" && (next === "/" || next === "*")) {
      const end = next === "/" ? text.indexOf("\n", i) : text.indexOf("*/", i + 2);
      const j = end < 0 ? n : next === "/" ? end : end + 2;
      out += blank(i, j);
      i = j;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < n && text[j] !== c && text[j] !== "\n") j += text[j] === "\\" ? 2 : 1;
      out += c + blank(i + 1, j) + (text[j] ?? "");
      i = j + 1;
      last = c;
      word = "";
    } else if (c === "`") {
      out += c;
      i = template(i + 1);
      word = "";
    } else if (c === "}" && closes.at(-1) === depth) {
      closes.pop();
      depth--;
      out += c;
      i = template(i + 1);
      word = "";
    } else if (c === "/" && (!/[\w$)\]]/.test(last) || KEYWORDS_BEFORE_REGEX.has(word))) {
      let j = i + 1;
      let inClass = false;
      while (j < n && text[j] !== "\n" && (inClass || text[j] !== "/")) {
        if (text[j] === "[") inClass = true;
        else if (text[j] === "]") inClass = false;
        j += text[j] === "\\" ? 2 : 1;
      }
      out += c + blank(i + 1, j) + (text[j] ?? "");
      i = j + 1;
      last = "/";
      word = "";
    } else {
      if (c === "{") depth++;
      else if (c === "}") depth--;
      out += c;
      if (!/\s/.test(c)) {
        word = /[\w$]/.test(c) ? (/[\w$]/.test(last) ? word : "") + c : "";
        last = c;
      }
      i++;
    }
  }
  return out;
}

/** The 1-based line of `index` in `text`. */
const lineOf = (text, index) => text.slice(0, index).split("\n").length;

const files = DIRS.flatMap(filesUnder);
const graph = new Map();
const violations = [];
for (const file of files) {
  const text = readFileSync(join(ROOT, file), "utf8");
  const agnostic = RUNTIME_AGNOSTIC.some((folder) => file.startsWith(folder));
  const hosted = onHostPort(file);
  const targets = new Set();
  for (const match of text.matchAll(SPEC)) {
    const spec = match[1] ?? match[2];
    if (spec.startsWith("cloudflare:")) {
      if (agnostic) violations.push(`${file}: imports ${spec} (${RULES.agnostic})`);
      else if (hosted) violations.push(`${file}: imports ${spec} (${RULES.host})`);
      else if (
        file.startsWith("src/") &&
        !file.startsWith("src/rpc/") &&
        !CLOUDFLARE_IMPORTERS.includes(file)
      )
        violations.push(`${file}: imports ${spec} (${RULES.cloudflare})`);
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
  // checked for SQL: every file of durable-objects/ but the stores
  const sqlChecked = file.startsWith("durable-objects/") && !file.startsWith("durable-objects/store/");
  if (!agnostic && !hosted && !sqlChecked) continue;
  const code = codeOf(text);
  if (agnostic || hosted) {
    const rule = agnostic ? RULES.agnostic : RULES.host;
    for (const match of code.matchAll(WORKERS_TYPE))
      violations.push(`${file}:${lineOf(code, match.index)}: names ${match[0]} (${rule})`);
  }
  if (sqlChecked) {
    for (const match of code.matchAll(SQL_CALL))
      violations.push(`${file}:${lineOf(code, match.index)}: calls .exec( (${RULES.sql})`);
  }
}

/** Whether `file` is written against the host port: durable-objects/ but its host adapters. */
function onHostPort(file) {
  return file.startsWith("durable-objects/") && !file.startsWith(HOST_ADAPTERS);
}

function layerRule(from, to) {
  if (from.startsWith("src/contract/") && !to.startsWith("src/contract/")) return RULES.contract;
  if (from.startsWith("src/core/") && !to.startsWith("src/core/") && !to.startsWith("src/contract/"))
    return RULES.core;
  if (from.startsWith("durable-objects/") && to.startsWith("src/http/")) return RULES.http;
  if (onHostPort(from) && to === STUBS) return RULES.host;
  if (
    from.startsWith("durable-objects/kernel/") &&
    to.startsWith("durable-objects/") &&
    !KERNEL_MAY_IMPORT.some((folder) => to.startsWith(folder))
  )
    return RULES.kernel;
  if (from.startsWith("src/") && to.startsWith("durable-objects/") && !COMPOSITION.includes(from))
    return RULES.composition;
  if (!from.startsWith("bench/") && to.startsWith("bench/")) return RULES.bench;
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
  console.error(`\n${violations.length} rule violation(s) in ${files.length} files`);
  process.exit(1);
}
console.log(`imports: ${files.length} files, no cycle, every layer, runtime and SQL rule holds`);
