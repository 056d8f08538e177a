#!/usr/bin/env node
// `npm run build` (and `prepack`, so `npm pack` and `npm publish` always ship a fresh build):
// builds the package's published shape into dist/:
//   dist/worker.js   subagents-edge/worker   (createSubagents with every protocol, defineTool, aiSdkModel, types)
//   dist/core.js     subagents-edge/core     (the same, with only the protocols it is given)
//   dist/mcp.js, a2a.js, acp.js, openai.js, workers-ai.js   subagents-edge/mcp, /a2a, /acp,
//                    /openai, /workers-ai (the protocols)
//   dist/client.js   subagents-edge/client and the root entry (the client SDK)
//   dist/chunks/     the code the entries share, and what they load on first use
//   dist/types/      the .d.ts of the entries, only the files they reach, with `.js` specifiers
// The JavaScript is bundled with esbuild, split into chunks (ESM, packages and `cloudflare:*` left
// as imports, so the user's bundler dedupes them, and a module shared by two entries is one module
// in the user's Worker); the declarations come from tsc. The build fails if a published
// declaration names this repository's own `Env` (a user's Worker has its own).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { build } from "esbuild";

const root = resolve(import.meta.dirname, "..");
const dist = join(root, "dist");
const ENTRIES = {
  worker: "src/worker/index.ts",
  core: "src/worker/core.ts",
  mcp: "src/protocols/mcp.ts",
  a2a: "src/protocols/a2a.ts",
  acp: "src/protocols/acp.ts",
  openai: "src/protocols/openai.ts",
  "workers-ai": "src/protocols/workers-ai.ts",
  client: "src/client/index.ts",
};

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

await build({
  absWorkingDir: root,
  entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, path]) => [name, path])),
  outdir: dist,
  bundle: true,
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  format: "esm",
  platform: "neutral",
  target: "es2022",
  packages: "external",
  external: ["cloudflare:*"],
  charset: "utf8",
  legalComments: "none",
  logLevel: "warning",
});

const tsc = spawnSync("npx", ["tsc", "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);

// Keep the declarations the entries reach; give relative specifiers the `.js` Node resolution wants.
const types = join(dist, "types");
const keep = new Set();
const pending = Object.values(ENTRIES).map((entry) => join(types, entry.replace(/\.ts$/, ".d.ts")));
const SPECIFIER = /(from\s+|import\(\s*)(["'])(\.{1,2}\/[^"']+)\2/g;
const problems = [];
while (pending.length > 0) {
  const file = pending.pop();
  if (keep.has(file)) continue;
  keep.add(file);
  let text = readFileSync(file, "utf8");
  text = text.replace(SPECIFIER, (_match, lead, quote, spec) => {
    const target = resolveDeclaration(dirname(file), spec);
    if (!target) {
      problems.push(`${relative(root, file)}: cannot resolve ${spec}`);
      return `${lead}${quote}${spec}${quote}`;
    }
    pending.push(target.file);
    return `${lead}${quote}${target.specifier}${quote}`;
  });
  if (
    /\bEnv\b(?!\s*[:=])/.test(text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "")) &&
    !/Cloudflare\.Env/.test(text)
  )
    problems.push(`${relative(root, file)}: names the repository's Env type`);
  writeFileSync(file, text);
}
for (const file of walk(types)) if (!keep.has(file)) rmSync(file);
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
const size = (name) => `${(statSync(join(dist, `${name}.js`)).size / 1024).toFixed(1)} KiB`;
console.log(
  `built dist/: ${Object.keys(ENTRIES)
    .map((name) => `${name}.js ${size(name)}`)
    .join(", ")}, ${keep.size} declaration files`,
);

function resolveDeclaration(from, spec) {
  for (const [suffix, js] of [
    [".d.ts", ".js"],
    ["/index.d.ts", "/index.js"],
  ]) {
    const file = join(from, `${spec.replace(/\.js$/, "")}${suffix}`);
    if (existsSync(file)) return { file, specifier: `${spec.replace(/\.js$/, "")}${js}` };
  }
  return undefined;
}

function* walk(dir) {
  for (const name of readdirSafe(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* walk(path);
    else yield path;
  }
}

function readdirSafe(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
