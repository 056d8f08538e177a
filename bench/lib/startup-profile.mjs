// One startup profile of a Worker, measured as `wrangler check startup` measures it (wrangler
// 4.156's analyseBundle): the upload wrangler built (`wrangler deploy --dry-run --outfile`: the
// Worker's modules and its metadata, as multipart form data) runs in a fresh workerd beside a
// profiler entry module, whose one request imports the Worker's main module under V8's sampling
// profiler; the profile spans that import (the Worker's global scope: compiling what it imports,
// evaluating it). One change: V8 samples every SAMPLING_US (100 us) instead of its default, whose
// samples, milliseconds apart, read a startup of a millisecond or two as 0 in most runs and as a
// whole sample in others, which made the trivial Worker's floor worthless as a divisor.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { devtools } from "./devtools.mjs";

export const SAMPLING_US = 100;

/** A module of the upload as Miniflare takes it, by the part's content type (wrangler's own mapping). */
async function moduleOf(name, part) {
  const type = part.type;
  const path = `/${name}`;
  if (type === "application/javascript+module")
    return { type: "ESModule", path, contents: await part.text() };
  if (type === "application/javascript") return { type: "CommonJS", path, contents: await part.text() };
  if (type === "text/plain") return { type: "Text", path, contents: await part.text() };
  if (type === "application/wasm")
    return { type: "CompiledWasm", path, contents: new Uint8Array(await part.arrayBuffer()) };
  return { type: "Data", path, contents: new Uint8Array(await part.arrayBuffer()) };
}

/** The Worker's modules and metadata from an upload file wrangler wrote. */
async function readUpload(uploadPath) {
  const bytes = readFileSync(uploadPath);
  const firstLine = bytes.toString("latin1", 0, bytes.indexOf("\r\n"));
  const boundary = firstLine.slice(2);
  const form = await new Response(bytes, {
    headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
  }).formData();
  const metadata = JSON.parse(String(form.get("metadata")));
  const modules = [];
  for (const [name, part] of form.entries()) {
    // source maps travel with the upload for stack traces; they are no module
    if (name === "metadata" || part.type === "application/source-map" || name.endsWith(".map")) continue;
    modules.push(await moduleOf(name, part));
  }
  return { metadata, modules };
}

/**
 * The bytes of the upload in `uploadPath` (every module) and those compiled at a start: the main
 * module and the modules it imports statically, transitively (workerd compiles a module when it is
 * first imported, so a module reached only by `import()` costs nothing until then).
 */
export async function uploadBytes(uploadPath) {
  const { metadata, modules } = await readUpload(uploadPath);
  const byPath = new Map(modules.map((m) => [m.path, m]));
  const size = (m) =>
    typeof m.contents === "string" ? Buffer.byteLength(m.contents) : m.contents.byteLength;
  const seen = new Set();
  const pending = [`/${metadata.main_module}`];
  while (pending.length > 0) {
    const path = pending.pop();
    const module = byPath.get(path);
    if (!module || seen.has(path)) continue;
    seen.add(path);
    if (typeof module.contents !== "string") continue;
    // static imports (`import ... from "./x"`, and `import "./x"` for a module's evaluation) and
    // re-exports of relative modules (esbuild writes them one per line)
    for (const [, spec] of module.contents.matchAll(
      /^(?:import|export)\b(?:[^;]*?\bfrom)?\s*"(\.{1,2}\/[^"]+)"/gm,
    ))
      pending.push(new URL(spec, `file://${path}`).pathname);
  }
  let total = 0;
  let atStart = 0;
  for (const module of modules) {
    total += size(module);
    if (seen.has(module.path)) atStart += size(module);
  }
  return { totalBytes: total, atStartBytes: atStart, modules: modules.length };
}

/** The V8 CPU profile of one start of the Worker in `uploadPath` (a fresh workerd each call). */
export async function profileStartup(uploadPath) {
  const { metadata, modules } = await readUpload(uploadPath);
  const entry = {
    type: "ESModule",
    // its own name, apart from every module of the Worker
    path: `/${randomUUID()}`,
    contents: [
      `export default {`,
      `  async fetch() {`,
      `    await import(${JSON.stringify(`/${metadata.main_module}`)});`,
      `    return new Response("ok");`,
      `  },`,
      `};`,
    ].join("\n"),
  };
  const options = convertV4MiniflareOptions({
    name: "profiler",
    compatibilityDate: metadata.compatibility_date,
    compatibilityFlags: metadata.compatibility_flags ?? [],
    modulesRoot: "/",
    modules: [entry, ...modules],
    inspectorPort: 0,
  });
  Object.assign(options, {
    unsafeObservability: false,
    unsafeLocalExplorer: false,
    enableDevRegistry: false,
  });
  const mf = new Miniflare(options);
  let cdp;
  try {
    await mf.ready;
    const inspector = await mf.getInspectorURL();
    cdp = await devtools(new URL("/core:user:profiler", inspector.href).href);
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: SAMPLING_US });
    await cdp.send("Profiler.start");
    const response = await mf.dispatchFetch("https://example.com/");
    const text = await response.text();
    if (!response.ok)
      throw new Error(`the Worker's module did not load: ${response.status} ${text.slice(0, 300)}`);
    const { profile } = await cdp.send("Profiler.stop");
    return profile;
  } finally {
    cdp?.close();
    await mf.dispose();
  }
}
