import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, inject, test } from "vitest";
import type { FaultPointName } from "../../src/core/faults";
import { api, createSession } from "../support/api";
import { clock, driveUntil, faults, removeAllFaults } from "../support/faults";
import { allEvents, hasSettled } from "../support/logs";
import { alarmOf, evict, outboxDrained, sqlRows, stub } from "../support/objects";
import { Rng } from "./prng";

/**
 * Schedule ends across crashes (README "Schedules"): a one-shot child whose only call schedules a
 * message (every minute, or once after a delay) settles its run while faults hit it: a crash
 * before or after an append, a storage failure at a commit (the settling one among them), an
 * alarm that throws, evictions between alarms. The clock then runs on for minutes, the child's
 * alarm run each one. The checker reads the child's log and tables: no schedule fired after its
 * run ended, no turn ran after it, and no schedule row is left. FAULT_SEEDS (a count or `lo-hi`)
 * and FAULT_SEED (one seed) pick the seeds, as for the campaign.
 */

const MINUTE = 60_000;
const DEFAULT_SEEDS = 16;

afterEach(() => {
  removeAllFaults();
  clock.release();
});

interface LogEvent {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

/**
 * What broke the promise in one child's log and tables (none: it held). The run ended in the
 * transaction of the child's first `turn/end` (its result goes to the outbox there).
 */
function checkScheduleEnds(log: readonly LogEvent[], scheduleRows: number): string[] {
  const wrong: string[] = [];
  const end = log.find((e) => e.type === "turn/end");
  if (!end) return ["the child's run never ended"];
  for (const e of log.filter((e) => e.seq > end.seq)) {
    if (e.type === "turn/start") wrong.push(`a turn started after the run ended (seq ${e.seq})`);
    const source = e.data.source as { kind?: string } | undefined;
    if (e.type === "agent/inbox/inserted" && source?.kind === "schedule")
      wrong.push(`a schedule fired after the run ended (seq ${e.seq})`);
  }
  const created = log.filter((e) => e.type === "schedule/created").map((e) => e.data.scheduleId);
  const deleted = new Set(log.filter((e) => e.type === "schedule/deleted").map((e) => e.data.scheduleId));
  for (const id of created) if (!deleted.has(id)) wrong.push(`schedule ${String(id)} never ended`);
  if (scheduleRows > 0) wrong.push(`${scheduleRows} schedule rows left`);
  return wrong;
}

function seedList(): number[] {
  const one = inject("faultSeed");
  if (one) return one.split(",").map(Number);
  const given = inject("faultSeeds");
  const range = /^(\d+)-(\d+)$/.exec(given);
  if (range)
    return Array.from({ length: Number(range[2]) - Number(range[1]) + 1 }, (_, i) => Number(range[1]) + i);
  return Array.from({ length: given ? Number(given) : DEFAULT_SEEDS }, (_, i) => i + 1);
}

const POINTS: readonly FaultPointName[] = [
  "before-append",
  "after-append",
  "in-transaction",
  "before-send",
  "in-alarm",
];

/** One seeded history; answers what the checker found. */
async function history(seed: number): Promise<string[]> {
  const rng = new Rng(seed * 7919 + 5);
  // a few hundred ms before a minute: a firing falls due while the turn runs, or right after it
  clock.set(Date.parse("2031-03-01T10:00:00Z") + rng.int(0, 30) * MINUTE - rng.int(0, 800));
  const { id: parent } = await createSession({ label: `schedule ends ${seed}` });
  const point = rng.pick(POINTS);
  const nth = rng.int(1, 6);
  const args = rng.chance(0.6)
    ? { message: "tick", cron: "* * * * *" }
    : { message: "later", delay_seconds: rng.int(1, 90) };
  const prompt = JSON.stringify({
    script: [
      { think: rng.int(50, 300) },
      { call: [{ tool: "schedule_message", args }] },
      { say: "scheduled" },
    ],
  });
  const started = await api("POST", `/v1/sessions/${parent}/subagents`, {
    body: {
      provider: "spawn",
      mode: "one-shot",
      prompt,
      toolFilter: { allow: ["schedule_message"] },
    },
  });
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  // the child's id is the one the start answers (an explicit childId lives in the caller's namespace)
  const child = started.body.id as string;
  faults(child, (p, n) => (p === point && n === nth ? "throw" : undefined));
  const runId = started.body.runId as string;
  await driveUntil(
    [parent, child],
    // (the child's tables exist once its start reached it)
    async () => (await hasSettled(parent, runId)) && (await outboxDrained(child).catch(() => false)),
    `seed ${seed}: the run to settle`,
    { stepMs: rng.int(200, 1_500) },
  );
  // the clock runs on: each minute the child's alarm runs (as the platform would), sometimes after an eviction
  for (let minute = 0; minute < 4; minute++) {
    clock.advance(MINUTE);
    if (rng.chance(0.4)) await evict(child);
    const alarm = await alarmOf(child);
    if (alarm !== null)
      await runDurableObjectAlarm(stub(child)).catch(() =>
        runInDurableObject(stub(child), (_o: unknown, state: DurableObjectState) =>
          state.storage.setAlarm(Date.now()),
        ),
      );
  }
  const rows = await sqlRows<{ n: number }>(
    child,
    "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'schedules'",
  );
  const left =
    rows[0]!.n === 0 ? 0 : (await sqlRows<{ n: number }>(child, "SELECT count(*) AS n FROM schedules"))[0]!.n;
  return checkScheduleEnds((await allEvents(child)) as LogEvent[], left);
}

describe("a one-shot child's schedules end with its run, across crashes (README 'Schedules')", () => {
  test("the checker is not vacuous: a firing or a turn after the run's end, and a row left, are caught", () => {
    const source = { kind: "schedule", scheduleId: "sch_1", at: 1 };
    const log: LogEvent[] = [
      { seq: 0, type: "turn/start", data: { turn: 1 } },
      { seq: 1, type: "schedule/created", data: { scheduleId: "sch_1" } },
      { seq: 2, type: "turn/end", data: { turn: 1 } },
      { seq: 3, type: "agent/inbox/inserted", data: { source } },
      { seq: 4, type: "turn/start", data: { turn: 2 } },
    ];
    expect(checkScheduleEnds(log, 1)).toEqual([
      "a schedule fired after the run ended (seq 3)",
      "a turn started after the run ended (seq 4)",
      "schedule sch_1 never ended",
      "1 schedule rows left",
    ]);
    expect(
      checkScheduleEnds(
        [...log.slice(0, 3), { seq: 3, type: "schedule/deleted", data: { scheduleId: "sch_1" } }],
        0,
      ),
    ).toEqual([]);
  });

  for (const seed of seedList()) {
    test(`seed ${seed}`, async () => {
      expect(await history(seed)).toEqual([]);
    });
  }
});
