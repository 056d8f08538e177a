import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, inject, test } from "vitest";
import { type FaultDetail, type FaultPointName, installFaults } from "../../src/core/faults";
import type { Spend } from "../../src/core/usage";
import { api, createSession, followup } from "../support/api";
import { clock } from "../support/faults";
import { allEvents } from "../support/logs";
import { sqlRows, stub } from "../support/objects";
import { type BudgetMember, checkBudget, type Granted } from "./budget-checker";
import { bounded, injected, probe, sleep } from "./objects";
import { Rng } from "./prng";
import { ABORT_REASON, type RuleKind } from "./scenario";

/**
 * Budget reservations across crashes (README "Prices and budgets"). Per seed: a session created
 * with a budget (tokens, or dollars at the suite's MODEL_PRICES for `openai:priced-*`) starts
 * children at once, one-shot and continuable, some whose model calls a tool at every step (only
 * the budget ends their turn); sometimes it runs a turn of its own, and continuable children get
 * a follow-up. Meanwhile rules crash, abort (the instance is reset mid-call) or fail a storage
 * commit at the points around a model call and its reservation (`before-reserve`,
 * `after-reserve`, `after-settle`, `after-draw` at the owner, `before-model`, `after-model`,
 * `before-append`, `after-append`), alarms throw or are lost (repaired as the parent's watchdog
 * or a client's look would), and instances are evicted between rounds. The clock moves a second a
 * round, so no reservation outlives its hold while its session is down. After the drain,
 * budget-checker.ts checks the tree against the budget's rules. FAULT_SEEDS (a count or `lo-hi`)
 * and FAULT_SEED (one seed, or `3,7`) pick the seeds, as for the campaign.
 */

/** About ten seconds a seed. */
const DEFAULT_SEEDS = 10;
const SECOND = 1_000;
/** A round's alarm that is not due within this is a periodic one (a watchdog's): nothing owed. */
const PERIODIC_MS = 60 * SECOND;

afterEach(() => {
  removePlans();
  clock.release();
});

function seedList(): number[] {
  const one = inject("faultSeed");
  if (one) return one.split(",").map(Number);
  const given = inject("faultSeeds");
  const range = /^(\d+)-(\d+)$/.exec(given);
  if (range)
    return Array.from({ length: Number(range[2]) - Number(range[1]) + 1 }, (_, i) => Number(range[1]) + i);
  return Array.from({ length: given ? Number(given) : DEFAULT_SEEDS }, (_, i) => i + 1);
}

/** Where a rule fires, by whose point it is, and how. */
const MEMBER_POINTS: readonly [FaultPointName, readonly RuleKind[]][] = [
  ["before-reserve", ["crash", "abort"]],
  ["after-reserve", ["crash", "abort"]],
  ["after-settle", ["crash", "abort"]],
  ["before-model", ["crash", "abort"]],
  // inside the step's catch-all a throw would be the call's failure: the instance goes down there
  ["after-model", ["abort"]],
  ["before-append", ["crash", "abort"]],
  ["after-append", ["crash", "abort"]],
  ["in-alarm", ["alarm"]],
  ["in-transaction", ["storage"]],
];
const OWNER_POINTS: readonly [FaultPointName, readonly RuleKind[]][] = [
  ["after-draw", ["crash"]],
  ["in-transaction", ["storage"]],
];
/** The points every full run must have fired a fault at. */
const BUDGET_POINTS: readonly FaultPointName[] = [
  "before-reserve",
  "after-reserve",
  "after-settle",
  "after-draw",
];

interface Rule {
  /** -1: the budget's owner; else the child's index. */
  scope: number;
  point: FaultPointName;
  kind: RuleKind;
  after: number;
  times: number;
}

interface ChildPlan {
  mode: "one-shot" | "continuable";
  /** Its model calls a tool at every step: only the budget (or the step limit) ends its turn. */
  loops: boolean;
  followsUp: boolean;
}

interface Scenario {
  model: string;
  limit: { tokens?: number; usd?: number };
  maxOutputTokens: number;
  children: ChildPlan[];
  ownerTurn: boolean;
  rules: Rule[];
  lostAlarms: number;
  evictEvery: number;
}

function generate(seed: number): Scenario {
  const rng = new Rng(seed * 7907 + 29);
  const usd = rng.chance(0.35);
  const children = Array.from({ length: rng.int(4, 8) }, () => ({
    mode: rng.pick(["one-shot", "continuable"] as const),
    // a looping step costs cents of its dollar reservation: fewer loops where dollars are counted
    loops: rng.chance(usd ? 0.2 : 0.4),
    followsUp: rng.chance(0.5),
  }));
  const rules: Rule[] = [];
  for (let i = rng.int(3, 6); i > 0; i--) {
    const [point, kinds] = rng.pick(MEMBER_POINTS);
    rules.push({
      scope: rng.int(0, children.length - 1),
      point,
      kind: rng.pick(kinds),
      after: rng.int(0, 2),
      times: rng.int(1, 2),
    });
  }
  for (let i = rng.int(1, 2); i > 0; i--) {
    const [point, kinds] = rng.pick(OWNER_POINTS);
    rules.push({ scope: -1, point, kind: rng.pick(kinds), after: rng.int(0, 6), times: rng.int(1, 2) });
  }
  const ownerTurn = rng.chance(0.5);
  if (ownerTurn) {
    const [point, kinds] = rng.pick(MEMBER_POINTS.slice(0, 3));
    rules.push({ scope: -1, point, kind: rng.pick(kinds), after: 0, times: 1 });
  }
  return {
    // output is the answer's words: a dollar child's 150-word prompt comes back in about 150
    model: usd ? "openai:priced-model" : "openai:ctx-1000000",
    limit: usd ? { usd: rng.pick([3, 4, 5]) } : { tokens: rng.int(5, 10) * 1000 },
    maxOutputTokens: usd ? 200 : rng.pick([60, 120, 200]),
    children,
    ownerTurn,
    rules,
    lostAlarms: rng.int(0, 2),
    evictEvery: rng.int(4, 9),
  };
}

// ---- the world of one seed: plans, observations, resets ----

const removers: (() => void)[] = [];
function removePlans(): void {
  for (const remove of removers.splice(0)) remove();
}

interface World {
  seed: number;
  rng: Rng;
  ownerId: string;
  /** Index -> child id (accepted starts only). */
  childIds: Map<number, string>;
  granted: Granted[];
  /** When the first of the reservations seen stops counting, on the sessions' clock. */
  earliestExpiry: number;
  /** Faults fired, by point. */
  fired: Map<string, number>;
  condemned: Set<string>;
  armed: boolean;
}

/**
 * The plan of one session: its rules (while the world is armed) and, at the owner, every
 * reservation `after-draw` reports. Runs inside the object: counters, a synchronous throw, or a
 * promise that never settles (the instance is then reset from outside: `abort`).
 */
function install(world: World, id: string, rules: readonly Rule[]): void {
  const counts = new Map<FaultPointName, number>();
  const done = new Map<Rule, number>();
  removers.push(
    installFaults(id, (point, detail?: FaultDetail) => {
      if (point === "after-draw" && detail?.held) {
        world.granted.push({ member: detail.member, key: detail.held.key, worst: detail.held.spend });
        world.earliestExpiry = Math.min(world.earliestExpiry, detail.held.expiresAt);
      }
      if (!world.armed) return;
      const n = (counts.get(point) ?? 0) + 1;
      counts.set(point, n);
      for (const rule of rules) {
        if (rule.point !== point || n <= rule.after || (done.get(rule) ?? 0) >= rule.times) continue;
        done.set(rule, (done.get(rule) ?? 0) + 1);
        world.fired.set(point, (world.fired.get(point) ?? 0) + 1);
        if (rule.kind === "abort") {
          world.condemned.add(id);
          return new Promise<void>(() => {});
        }
        throw injected(rule.kind, point, world.seed);
      }
    }),
  );
}

async function reap(world: World): Promise<void> {
  for (const id of [...world.condemned]) {
    world.condemned.delete(id);
    await bounded(
      runInDurableObject(stub(id), (_i: unknown, state: DurableObjectState) =>
        state.abort(ABORT_REASON),
      ).catch(() => {}),
      3_000,
    );
  }
}

/**
 * Rounds of a second each until every session is quiet: its alarm's work is run when due (a
 * failed alarm is armed again, as the platform retries), some alarms are lost and later repaired
 * (a child's by the parent's watchdog, `wake`; the owner's by a client's look), and now and then
 * a session is evicted. Quiet: nothing changed for five rounds and no alarm is due within a minute.
 */
async function drive(world: World, scenario: Scenario, maxRounds: number): Promise<boolean> {
  const ids = () => [world.ownerId, ...world.childIds.values()];
  const lost = new Set<string>();
  let last = "";
  let stable = 0;
  for (let round = 1; round <= maxRounds; round++) {
    await reap(world);
    clock.advance(SECOND);
    const states = await Promise.all(ids().map((id) => probe(env.SESSIONS.idFromName(id))));
    const signature = states.map((s) => s.signature).join("|");
    stable = signature === last ? stable + 1 : 0;
    last = signature;
    const now = Date.now();
    if (stable >= 5 && states.every((s) => s.alarm === null || (s.alarm ?? 0) > now + PERIODIC_MS))
      return true;
    for (const [i, id] of ids().entries()) {
      const alarm = states[i]?.alarm;
      if (alarm === null || alarm === undefined || alarm > now) continue;
      if (world.armed && scenario.lostAlarms > lost.size && world.rng.chance(0.08)) {
        lost.add(id);
        world.fired.set("alarm-delivery", (world.fired.get("alarm-delivery") ?? 0) + 1);
        await bounded(
          runInDurableObject(stub(id), (_i: unknown, state: DurableObjectState) =>
            state.storage.deleteAlarm(),
          ),
          5_000,
        );
        continue;
      }
      const ran = await bounded(runDurableObjectAlarm(stub(id)), 10_000).catch(() => undefined);
      if (!ran)
        await bounded(
          runInDurableObject(stub(id), (_i: unknown, state: DurableObjectState) =>
            state.storage.setAlarm(Date.now()),
          ),
          5_000,
        ).catch(() => {});
    }
    // the watchdog's and the client's looks: a lost wake-up is repaired
    if (round % 3 === 0)
      for (const id of ids()) {
        if (id === world.ownerId) await bounded(api("GET", `/v1/sessions/${id}`), 5_000);
        else await bounded(stub(id).wake(), 5_000).catch(() => {});
      }
    if (round % scenario.evictEvery === 0) {
      const id = world.rng.pick(ids());
      await bounded(evictDurableObject(stub(id)), 1_500).catch(() => {});
    }
    await sleep(30);
  }
  return false;
}

function startBody(scenario: Scenario, child: ChildPlan, i: number): Record<string, unknown> {
  const words = Array.from({ length: 150 }, (_, w) => `w${(w + i) % 10}`).join(" ");
  const prompt = child.loops
    ? "keep using the tool"
    : scenario.limit.usd !== undefined
      ? `${words} (${i})`
      : `tell me about the weather in a few words (${i})`;
  return {
    provider: "spawn",
    mode: child.mode,
    label: `c${i}`,
    prompt,
    model: scenario.model,
    maxOutputTokens: scenario.maxOutputTokens,
  };
}

/** One seeded history; answers what the checker found. */
async function history(seed: number): Promise<string[]> {
  const scenario = generate(seed);
  clock.freeze();
  const { id: ownerId } = await createSession({
    label: `budget seed ${seed}`,
    model: scenario.model,
    budget: scenario.limit,
    maxOutputTokens: scenario.maxOutputTokens,
  });
  const world: World = {
    seed,
    rng: new Rng(seed * 104723 + 7),
    ownerId,
    childIds: new Map(),
    granted: [],
    earliestExpiry: Number.POSITIVE_INFINITY,
    fired: new Map(),
    condemned: new Set(),
    armed: false,
  };
  install(
    world,
    ownerId,
    scenario.rules.filter((r) => r.scope === -1),
  );
  // every start at once: the budget decides which begin
  const starts = await Promise.all(
    scenario.children.map((child, i) =>
      api("POST", `/v1/sessions/${ownerId}/subagents`, { body: startBody(scenario, child, i) }),
    ),
  );
  for (const [i, s] of starts.entries()) {
    const id = (s.body?.id ?? s.body?.childId) as string | undefined;
    if (s.status < 300 && id) {
      world.childIds.set(i, id);
      install(
        world,
        id,
        scenario.rules.filter((r) => r.scope === i),
      );
    }
  }
  world.armed = true;
  if (scenario.ownerTurn)
    await api("POST", `/v1/sessions/${ownerId}/messages`, { body: { content: "keep using the tool" } });
  let quiet = await drive(world, scenario, 70);
  for (const [i, id] of world.childIds)
    if (scenario.children[i]!.mode === "continuable" && scenario.children[i]!.followsUp)
      await followup(ownerId, id, `and once more, in other words (${i})`);
  quiet = (await drive(world, scenario, 60)) && quiet;
  world.armed = false;
  quiet = (await drive(world, scenario, 20)) && quiet;

  const members: BudgetMember[] = [];
  const draws = await sqlRows<{ member_id: string; tokens: number; usd: number }>(
    ownerId,
    "SELECT member_id, tokens, usd FROM budget_draws",
  ).catch(() => []);
  const rowsLeft = await sqlRows<{ member_id: string; step_key: string }>(
    ownerId,
    "SELECT member_id, step_key FROM budget_reservations",
  ).catch(() => []);
  const named: [string, string][] = [
    ["owner", ownerId],
    ...[...world.childIds].map(([i, id]): [string, string] => [`c${i}`, id]),
  ];
  for (const [name, id] of named) {
    const held = await sqlRows<{ value: string }>(
      id,
      "SELECT value FROM flags WHERE name = 'budget:held'",
    ).catch(() => []);
    const draw = draws.find((d) => d.member_id === id);
    members.push({
      id,
      name,
      log: await allEvents(id),
      ...(draw ? { drawn: { tokens: draw.tokens, usd: draw.usd } } : {}),
      ...(held[0] ? { held: held[0].value } : {}),
    });
  }
  const view = (await api("GET", `/v1/sessions/${ownerId}`)).body?.budget as
    | { used: number; usedUsd?: number }
    | undefined;
  const ownerFigure: Spend = { tokens: view?.used ?? 0, usd: view?.usedUsd ?? 0 };
  const report = checkBudget({
    limit: scenario.limit,
    ownerId,
    members,
    granted: world.granted,
    rowsLeft: rowsLeft.map((r) => ({ member: r.member_id, key: r.step_key })),
    ownerFigure,
    starts: starts.map((s) => ({
      status: s.status,
      ...(s.body?.error?.code ? { code: s.body.error.code } : {}),
    })),
  });
  const wrong = [...report.violations];
  if (!quiet) wrong.push("the drive never went quiet");
  // a reservation stops counting when its hold ends: the campaign's clock must stay within it
  if (Date.now() >= world.earliestExpiry)
    wrong.push(`the clock passed a reservation's hold by ${Date.now() - world.earliestExpiry} ms`);
  for (const [point, n] of world.fired) firedAt.set(point, (firedAt.get(point) ?? 0) + n);
  if (inject("faultSeed")) {
    const refused = members.flatMap((m) => m.log).filter((e) => e.data.code === "BUDGET_EXCEEDED").length;
    console.log(
      `budget seed ${seed}: limit ${JSON.stringify(scenario.limit)} spent ${JSON.stringify(report.spent)} ` +
        `margin ${JSON.stringify(report.margin)}; ${world.childIds.size}/${starts.length} started, ` +
        `${world.granted.length} grants, ${refused} turns refused; fired ${JSON.stringify([...world.fired])}`,
    );
  }
  return wrong;
}

/** Faults fired per point over the seeds run so far. */
const firedAt = new Map<string, number>();

describe("budget reservations hold across crashes (README 'Prices and budgets')", () => {
  for (const seed of seedList()) {
    test(`seed ${seed}`, async () => {
      expect(
        await history(seed),
        `seed ${seed}; replay: FAULT_SEED=${seed} npx vitest run -c vitest.faults.config.ts test/faults/budget-reservations.test.ts`,
      ).toEqual([]);
    });
  }
  const whole = !inject("faultSeed") && !inject("faultSeeds");
  test.skipIf(!whole)("every budget fault point fired at least once", () => {
    expect(BUDGET_POINTS.filter((point) => !firedAt.has(point))).toEqual([]);
  });
});
