import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, inject, test } from "vitest";
import { check } from "./checker";
import { collectControl, createControlRoots, finishControl } from "./control-run";
import { allObjects, bindReserved, restoreClock, Runner, type Op } from "./harness";
import { execute, flush, settleApprovals } from "./steps";
import { REGISTRY_FAULT_SCOPE } from "../../src/core/faults";
import { EXTRA_POINTS, generate, POINTS, REGISTRY_REF, type Scenario } from "./scenario";
import { snapshot, type Snapshot } from "./snapshot";
import { REGRESSION_SEEDS } from "./regressions";
import type { SeedReport } from "./summary";

/**
 * The fault campaign (README, Reliability: "Measuring it"). Per seed: generate a forest of sessions,
 * operations and fault rules; run the operations over HTTP while the rules fire at the runtime's
 * named fault points and instances are evicted; drain every alarm until nothing moves; wake
 * parked work and drain again; then check every session's tables against the history.
 *
 *   (default)             seeds 1..200, then the regression seeds (regressions.ts)
 *   FAULT_SEEDS=40        seeds 1..40                     FAULT_SEEDS=100-120   a range
 *   FAULT_SEED=17         replay one seed (or 3,7,9), printing its history and logs
 */

declare module "vitest" {
  export interface ProvidedContext {
    faultSeeds: string;
    faultSeed: string;
  }
}

/** Seeds 1..200 run in about 100 s on two cores. */
const DEFAULT_SEEDS = 200;

function seedList(): number[] {
  const one = inject("faultSeed");
  if (one) return one.split(",").map(Number);
  const given = inject("faultSeeds");
  if (!given) {
    const seeds = Array.from({ length: DEFAULT_SEEDS }, (_, i) => i + 1);
    return [...seeds, ...REGRESSION_SEEDS.map((r) => r.seed).filter((s) => !seeds.includes(s))];
  }
  const spec = given;
  const range = /^(\d+)-(\d+)$/.exec(spec);
  if (range) {
    const [lo, hi] = [Number(range[1]), Number(range[2])];
    return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
  }
  return Array.from({ length: Number(spec) }, (_, i) => i + 1);
}

const verbose = (): boolean => inject("faultSeed") !== "";

async function runSeed(seed: number): Promise<{ report: SeedReport; detail: string }> {
  const t0 = performance.now();
  const scenario = generate(seed);
  const before = new Set((await allObjects()).map((o) => o.toString()));
  const objects = async (): Promise<DurableObjectId[]> =>
    (await allObjects()).filter((o) => !before.has(o.toString()));
  const runner = new Runner(seed, scenario.rules);

  try {
    for (const root of scenario.roots) {
      const op = await runner.call("create", root.ref, "POST", "/v1/sessions", {
        backgroundMode: root.backgroundMode,
        label: `${root.ref} seed ${seed}`,
        ...(root.contextWindow === undefined ? {} : { contextWindow: root.contextWindow }),
        ...(root.requireApproval === undefined ? {} : { requireApproval: root.requireApproval }),
        ...(root.approvalTimeoutSeconds === undefined
          ? {}
          : { approvalTimeoutSeconds: root.approvalTimeoutSeconds }),
      });
      if (op.outcome === "ok") runner.bind(root.ref, String(op.result?.id));
    }
    // children with reserved ids: their rules are installed before they exist
    for (const child of scenario.children) bindReserved(runner, child, child.root);
    await createControlRoots(runner, scenario);
    const httpIds = new Set(
      [...scenario.children, ...(scenario.control?.children ?? [])].flatMap((c) => (c.id ? [c.id] : [])),
    );
    runner.bind(REGISTRY_REF, REGISTRY_FAULT_SCOPE);
    runner.startReaper();
    const t1 = performance.now();
    for (const step of scenario.steps) {
      await execute(runner, scenario, step);
      await runner.discoverModelChildren(httpIds);
    }
    await runner.stopReaper();

    const t2 = performance.now();
    // a polling client looks at its roots, the control roots among them
    const rootRefs = [...scenario.roots.map((r) => r.ref), ...(scenario.control?.roots ?? [])];
    const rootIds = () => rootRefs.flatMap((ref) => (runner.ids.has(ref) ? [runner.ids.get(ref)!] : []));
    let quiesced = await runner.drain(objects, rootIds);
    await runner.discoverModelChildren(httpIds);
    await finishControl(runner, scenario, (step) => execute(runner, scenario, step));
    await flush(runner, scenario);
    quiesced = (await runner.drain(objects, rootIds)) && quiesced;
    runner.removePlans();
    // calls still waiting on a decision hold their turns (and the messages queued behind them):
    // the client denies them, and again for gated calls the turns it freed then reach
    for (let round = 0; round < 8 && (await settleApprovals(runner, scenario)) > 0; round++)
      quiesced = (await runner.drain(objects, rootIds)) && quiesced;
    await runner.settle();
    const t3 = performance.now();

    const control = await collectControl(runner, scenario);
    const snapshots: Snapshot[] = [];
    for (const object of await objects()) snapshots.push(await snapshot(object));
    // an object that never became a session (a cancel's tombstone) is named by the ids pointing at it
    const names = new Map<string, string>();
    const known = [
      ...runner.ids.values(),
      ...snapshots.flatMap((s) => [...s.outbox.map((r) => r.target), ...s.children.map((c) => c.childId)]),
    ];
    for (const name of known) names.set(env.SESSIONS.idFromName(name).toString(), name);
    const sessions = new Map<string, Snapshot>();
    for (const s of snapshots) sessions.set(s.header?.id ?? names.get(s.objectId) ?? s.objectId, s);
    const roots = scenario.roots.flatMap((r) => (runner.ids.has(r.ref) ? [runner.ids.get(r.ref)!] : []));
    const directory = await directoryOf(roots);
    const checked = check({
      scenario,
      history: runner.history,
      ids: runner.ids,
      sessions,
      directory,
      fired: runner.fired,
      resets: runner.resets,
      ...(control ? { control } : {}),
    });
    // alarms that keep re-arming (or logs that keep growing) past the drain's bound never settle
    if (!quiesced)
      checked.violations.push({ category: "stuck", session: "*", message: "the drain never quiesced" });
    const report: SeedReport = {
      seed,
      ms: Math.round(performance.now() - t0),
      ops: runner.history.map((o) => ({ kind: o.kind, outcome: o.outcome })),
      injected: runner.fired,
      pointHits: runner.hits.points as Record<string, number>,
      violations: checked.violations,
      answers: checked.answers,
      unanswered: checked.unanswered,
      notes: [...checked.notes, ...runner.notes],
      quiesced,
      sessions: [...sessions.values()].filter((s) => s.header).length,
      evictBusy: runner.evictBusy,
      alarmRetries: runner.alarmErrors,
      phases: { setup: Math.round(t1 - t0), ops: Math.round(t2 - t1), drain: Math.round(t3 - t2), check: 0 },
    };
    report.phases.check = Math.round(performance.now() - t3);
    const detail =
      checked.violations.length > 0 || verbose()
        ? describeSeed(scenario, runner.history, runner, sessions)
        : "";
    // a replay keeps its seed's detail (test-results/faults/seed-<n>.txt) even when it passed
    if (checked.violations.length > 0 || verbose()) report.detail = detail;
    return { report, detail };
  } finally {
    runner.removePlans();
    restoreClock();
  }
}

/** A failing (or replayed) seed: its scenario, history and the logs of every session. */
function describeSeed(
  scenario: Scenario,
  history: readonly Op[],
  runner: Runner,
  sessions: ReadonlyMap<string, Snapshot>,
): string {
  const lines: string[] = [`seed ${scenario.seed}`, `rules: ${JSON.stringify(scenario.rules)}`];
  lines.push(`fired: ${JSON.stringify(runner.fired)}`);
  lines.push(`resets by the reaper: ${JSON.stringify(runner.resets)}`);
  lines.push("history:");
  for (const op of history) {
    lines.push(
      `  #${op.id} ${op.kind} ${op.target} ${op.outcome} ${op.status ?? ""} ${op.code ?? ""} ` +
        `[${op.wall?.start ?? "?"}..${op.wall?.end ?? "?"}] ${JSON.stringify(op.result ?? {})}`,
    );
  }
  for (const [id, s] of sessions) {
    const ref = runner.refOf(id);
    lines.push(
      `session ${ref} ${id} parent=${s.header?.parentSession ? runner.refOf(s.header.parentSession) : "-"} mode=${s.header?.mode ?? "root"} loop=${JSON.stringify(s.loop)}`,
    );
    for (const e of s.events) {
      const data = JSON.stringify(e.data);
      lines.push(`  ${e.seq} @${e.at} ${e.type} ${data.length > 160 ? `${data.slice(0, 160)}...` : data}`);
    }
    for (const r of s.outbox)
      lines.push(
        `  outbox ${r.id} -> ${runner.refOf(r.target)} attempts=${r.attempts} delivered=${r.deliveredAt !== null} dead=${r.deadAt !== null} ${r.lastError ?? ""}`,
      );
    for (const r of s.runs) lines.push(`  run ${r.runId} child=${runner.refOf(r.childId)} ${r.state}`);
    for (const r of s.children) lines.push(`  child ${runner.refOf(r.childId)} ${r.mode} ${r.state}`);
    for (const r of s.epochs) lines.push(`  epoch ${r.runId} ${runner.refOf(r.childId)} ${r.state}`);
  }
  return lines.join("\n");
}

/** Which of `ids` the registry's session directory lists (the registry is one object, shared). */
async function directoryOf(ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const registry = env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
  const listed = await runInDurableObject(registry, (_instance: unknown, state: DurableObjectState) =>
    state.storage.sql
      .exec<{ id: string }>(`SELECT id FROM sessions WHERE id IN (${ids.map(() => "?").join(", ")})`, ...ids)
      .toArray()
      .map((r) => r.id),
  );
  return new Set(listed);
}

/** Registers one test per seed, then the check that the campaign fired every named fault point. */
export function defineCampaign(): void {
  const seeds = seedList();
  /** Faults injected per point over the seeds run so far (they run in order, in this module). */
  const firedAt = new Map<string, number>();
  describe("fault campaign", () => {
    test.for(seeds)("seed %i", async (seed, { task }) => {
      const { report, detail } = await runSeed(seed);
      task.meta.faultSeed = report;
      for (const fired of report.injected) firedAt.set(fired.point, (firedAt.get(fired.point) ?? 0) + 1);
      if (detail && verbose()) console.log(detail);
      const known = REGRESSION_SEEDS.find((r) => r.seed === seed);
      expect(
        report.violations.map((v) => `${v.category} ${v.session}: ${v.message}`),
        `seed ${seed}${known ? ` (regression seed: ${known.bug})` : ""}; replay: FAULT_SEED=${seed} npm run test:faults`,
      ).toEqual([]);
    });
    // a replay of chosen seeds need not cover every point; the whole campaign must
    const whole = !inject("faultSeed") && !inject("faultSeeds");
    test.skipIf(!whole)("every named fault point fired at least once", () => {
      expect([...POINTS, ...EXTRA_POINTS].filter((point) => !firedAt.has(point))).toEqual([]);
    });
  });
}

declare module "vitest" {
  interface TaskMeta {
    faultSeed?: SeedReport;
  }
}
