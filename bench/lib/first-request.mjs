// The `first-request` row (bench/README.md, "First request"): what the first user of a fresh
// workerd waits for, from the start of workerd to the answer of their first work, beside the same
// for the floor Worker (bench/startup/trivial).
//
// Each sample starts a fresh workerd on fresh persistence (the bench's startWorker, from a bundle
// built once, so no build is timed) and times from the Miniflare instance's creation to:
// * this runtime (split at its dynamic imports as its build splits it for deployment): one
//   `POST /v1/sessions` (admin token), its event stream opened (the session's
//   token), one plain text message sent and its turn's `assistant/message` (`echo: <text>`)
//   received;
// * the floor: one request that starts its SQLite Durable Object and writes one row in it.
// Samples alternate between the two, so both see the same background load; each workerd is
// stopped before the next starts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client, textOf } from "./client.mjs";
import { summarize } from "./stats.mjs";
import { bundle, startFixture, startWorker } from "./worker.mjs";

const ROOT = resolve(import.meta.dirname, "../..");
const TRIVIAL = join(ROOT, "bench/startup/trivial");

/** One create and one message to its answer on a started runtime; resolves with the ms it took. */
async function createAndEcho(worker) {
  const t0 = performance.now();
  const admin = new Client(worker.url, worker.adminToken);
  const created = await admin.createSession({ label: "bench-first-request" });
  const client = admin.withToken(created.token);
  const stream = await client.openStream(created.id, -1);
  try {
    await client.send(created.id, "first");
    await stream.next((e) => e.type === "assistant/message" && textOf(e) === "echo: first", 30_000);
  } finally {
    stream.close();
  }
  return performance.now() - t0;
}

/** The floor Worker's one request (its object started, one row written). */
async function floorRequest(url) {
  const t0 = performance.now();
  const response = await fetch(`${url}/first`, { method: "POST", signal: AbortSignal.timeout(30_000) });
  const body = await response.json();
  if (response.status !== 200 || body.rows !== 1)
    throw new Error(`the floor Worker answered ${response.status} ${JSON.stringify(body)}`);
  return performance.now() - t0;
}

/**
 * `samples` fresh starts of each, alternating, within `budgetMs` (at least one each). Resolves
 * { runtime, floor }: each { total, ready, request } summaries (ms) and `samples` (each start's
 * { readyMs, requestMs }).
 */
export async function firstRequestRounds({ samples, budgetMs, bindings = {} }) {
  const dir = mkdtempSync(join(tmpdir(), "subagents-first-"));
  try {
    // split as this repository's Worker is deployed (scripts/build-worker.mjs): a start compiles
    // only what the main module imports statically
    const runtimeScript = await bundle(join(ROOT, "bench/worker/entry.ts"), join(dir, "runtime"), {
      split: true,
    });
    const floorScript = await bundle(join(TRIVIAL, "src/worker.ts"), join(dir, "trivial"));
    const taken = { runtime: [], floor: [] };
    const deadline = performance.now() + budgetMs;
    for (let i = 0; i < samples && (i === 0 || performance.now() < deadline); i++) {
      const order = i % 2 === 0 ? ["runtime", "floor"] : ["floor", "runtime"];
      for (const which of order) {
        if (which === "runtime") {
          const worker = await startWorker({ bindings, scriptPath: runtimeScript });
          try {
            taken.runtime.push({ readyMs: worker.readyMs, requestMs: await createAndEcho(worker) });
          } finally {
            await worker.stop();
          }
        } else {
          const floor = await startFixture(TRIVIAL, floorScript);
          try {
            taken.floor.push({ readyMs: floor.readyMs, requestMs: await floorRequest(floor.url) });
          } finally {
            await floor.stop();
          }
        }
      }
    }
    const summary = (list) => ({
      total: summarize(list.map((s) => s.readyMs + s.requestMs)),
      ready: summarize(list.map((s) => s.readyMs)),
      request: summarize(list.map((s) => s.requestMs)),
      samples: list,
    });
    return { runtime: summary(taken.runtime), floor: summary(taken.floor) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
