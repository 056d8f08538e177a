#!/usr/bin/env node
// `npm run bench:ab -- --baseline=<ref>`: the same rounds against two builds of the runtime in
// one run, so that a change is judged against what it changed (issue "no regression": within
// noise). A is the baseline commit (a clean checkout in a git worktree sharing this node_modules),
// B this working tree; each is the benchmark Worker (bench/worker/entry.ts) bundled as the bench
// bundles it and started in its own workerd (bench/lib/worker.mjs). Rounds alternate A and B (the
// order flips each round), so both see the same background load:
//   accepted   POST /v1/sessions/:id/messages with the session's token, to its 202
//   spawn      spawn to result (one-shot `spawn` child, its run long-polled until settled)
//   fan-out    a new parent starts --children one-shot children at once; all settled, per child
// Prints each row's p50 for A and B and B/A.
//   --baseline=<ref>   default HEAD (the last commit, against uncommitted changes)
//   --n=<count>        rounds of accepted and spawn (default 300), --fanout-rounds (default 20),
//                      --children (default 20)
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "./lib/client.mjs";
import { spawnToResult } from "./lib/delegation.mjs";
import { ratio, summarize } from "./lib/stats.mjs";
import { bundle, startWorker } from "./lib/worker.mjs";

const ROOT = resolve(import.meta.dirname, "..");
const args = new Map(
  process.argv.slice(2).map((a) => {
    const [key, value] = a.replace(/^--/, "").split("=");
    return [key, value ?? "true"];
  }),
);
const int = (name, fallback) => Math.max(1, Number(args.get(name) ?? fallback) | 0);
const BASELINE = args.get("baseline") ?? "HEAD";
const N = int("n", 300);
const FANOUT_ROUNDS = int("fanout-rounds", 20);
const CHILDREN = int("children", 20);
const WARMUP = 20;

const git = (...a) => execFileSync("git", a, { cwd: ROOT, encoding: "utf8" }).trim();
const work = mkdtempSync(join(tmpdir(), "subagents-ab-"));
const checkout = join(work, "baseline");
git("worktree", "add", "--detach", checkout, BASELINE);
const workers = [];
try {
  symlinkSync(join(ROOT, "node_modules"), join(checkout, "node_modules"), "dir");
  const scriptA = await bundle(join(checkout, "bench/worker/entry.ts"), join(work, "a"));
  const scriptB = await bundle(join(ROOT, "bench/worker/entry.ts"), join(work, "b"));
  const sides = [];
  for (const [name, scriptPath] of [
    ["A", scriptA],
    ["B", scriptB],
  ]) {
    const worker = await startWorker({ scriptPath });
    workers.push(worker);
    const admin = new Client(worker.url, worker.adminToken);
    const sessions = [];
    for (let i = 0; i < 8; i++) {
      const created = await admin.createSession({ label: `ab-${name}-${i}` });
      sessions.push({ id: created.id, client: admin.withToken(created.token) });
    }
    const parents = [];
    for (let i = 0; i < 4; i++) parents.push((await admin.createSession({ label: `ab-parent-${i}` })).id);
    sides.push({ name, admin, sessions, parents, accepted: [], spawn: [], fanout: [] });
  }
  const refusals = new Map();
  const inTurn = async (round, work) => {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) await work(side);
  };
  for (let i = 0; i < WARMUP + N; i++)
    await inTurn(i, async (side) => {
      const s = side.sessions[i % side.sessions.length];
      const t0 = performance.now();
      await s.client.send(s.id, `ab ${i}`);
      if (i >= WARMUP) side.accepted.push(performance.now() - t0);
      const { total } = await spawnToResult(
        side.admin,
        side.parents[i % 4],
        refusals,
        performance.now() + 60_000,
      );
      if (i >= WARMUP) side.spawn.push(total);
    });
  for (let r = 0; r < 2 + FANOUT_ROUNDS; r++)
    await inTurn(r, async (side) => {
      const parent = (await side.admin.createSession({ label: `ab-fanout-${r}` })).id;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: CHILDREN }, () =>
          spawnToResult(side.admin, parent, refusals, performance.now() + 120_000),
        ),
      );
      if (r >= 2) side.fanout.push((performance.now() - t0) / CHILDREN);
    });
  const [a, b] = sides;
  const at = git("rev-parse", "--short", BASELINE);
  const dirty = git("status", "--porcelain", "--", "src", "durable-objects") !== "";
  console.log(
    `A: ${BASELINE} (${at}); B: the working tree at ${git("rev-parse", "--short", "HEAD")}${dirty ? " with uncommitted changes" : ""}`,
  );
  for (const [row, key] of [
    ["message accepted (202), session token", "accepted"],
    ["spawn to result", "spawn"],
    [`fan-out of ${CHILDREN}, per child`, "fanout"],
  ]) {
    const pa = summarize(a[key]).p50;
    const pb = summarize(b[key]).p50;
    console.log(
      `${row}: A ${pa.toFixed(2)} ms, B ${pb.toFixed(2)} ms, B/A ${ratio(pb, pa)} (n=${a[key].length})`,
    );
  }
  if (refusals.size > 0)
    console.log(`refused starts (retried): ${JSON.stringify(Object.fromEntries(refusals))}`);
} finally {
  for (const worker of workers) await worker.stop().catch(() => {});
  git("worktree", "remove", "--force", checkout);
  rmSync(work, { recursive: true, force: true });
}
