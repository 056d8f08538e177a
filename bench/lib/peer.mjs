// The benchmark's peer (bench/peer/): the same delegations with Cloudflare's Agents SDK. Its
// package is installed into bench/peer from its own lockfile the first time the bench runs (the
// product's `npm ci` never installs it); its Worker is bundled with esbuild the way the benchmark
// Worker is and runs in its own workerd through Miniflare 5, on loopback, with fresh persistence.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { build } from "esbuild";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { WORKER_BUNDLE } from "../../cli/build.mjs";

const ROOT = resolve(import.meta.dirname, "../..");
const PEER = join(ROOT, "bench/peer");

/** Installs bench/peer's package (`npm ci` from its lockfile) unless every dependency is there at its version. */
export function ensurePeerInstalled(log) {
  const { dependencies } = JSON.parse(readFileSync(join(PEER, "package.json"), "utf8"));
  const installed = (name, version) => {
    const manifest = join(PEER, "node_modules", name, "package.json");
    return existsSync(manifest) && JSON.parse(readFileSync(manifest, "utf8")).version === version;
  };
  if (Object.entries(dependencies).every(([name, version]) => installed(name, version))) return;
  log("installing the peer's package (bench/peer: the Agents SDK) from its lockfile");
  execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: PEER, stdio: "inherit" });
}

/** Bundles a Worker for workerd as wrangler does (cli/build.mjs's settings). Resolves its size in bytes. */
async function bundle(entry, outfile, alias = {}) {
  await build({
    entryPoints: [entry],
    outfile,
    ...WORKER_BUNDLE,
    alias,
    logLevel: "warning",
  });
  return statSync(outfile).size;
}

/**
 * Starts the peer Worker. Resolves { url, bundleBytes, productBundleBytes, stop() }: the sizes of
 * the peer's bundle and of the product's own Worker (src/index.ts) built the same way.
 */
export async function startPeer() {
  const dir = mkdtempSync(join(tmpdir(), "subagents-peer-"));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  process.once("exit", cleanup);
  try {
    // the SDK imports its email helpers at load; the benchmark sends no email
    const emailStub = join(dir, "email-stub.mjs");
    await build({
      stdin: { contents: "export class EmailMessage {}", loader: "js" },
      outfile: emailStub,
      logLevel: "warning",
    });
    const scriptPath = join(dir, "peer.mjs");
    const bundleBytes = await bundle(join(PEER, "worker.ts"), scriptPath, { "cloudflare:email": emailStub });
    const productBundleBytes = await bundle(join(ROOT, "src/index.ts"), join(dir, "product.mjs"));
    const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
    const mf = new Miniflare(
      convertV4MiniflareOptions({
        name: "peer",
        modules: true,
        scriptPath,
        rootPath: dir,
        // the product's own compatibility settings (wrangler.toml), so both run on the same workerd
        compatibilityDate: /^compatibility_date = "([^"]+)"/m.exec(toml)?.[1],
        compatibilityFlags: ["nodejs_compat"],
        durableObjects: {
          PEER_PARENT: { className: "PeerParent", useSQLite: true },
          PEER_CHILD: { className: "PeerChild", useSQLite: true },
        },
        durableObjectsPersist: join(dir, "state"),
        host: "127.0.0.1",
        port: 0,
      }),
    );
    const url = (await mf.ready).origin;
    return {
      url,
      bundleBytes,
      productBundleBytes,
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
